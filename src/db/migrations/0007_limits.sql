-- Rate buckets and concurrency slots in PostgreSQL: shared by every process when there is no Redis.
CREATE TABLE rate_buckets (
  key text PRIMARY KEY,
  tokens double precision NOT NULL,
  last_refill bigint NOT NULL,
  last_allowed boolean NOT NULL DEFAULT true
);

CREATE TABLE execution_slots (
  account text NOT NULL,
  token text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (account, token)
);
