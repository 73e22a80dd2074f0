-- Cost events per billed account and billing period (a calendar month, UTC): run base charges and
-- model tokens. Written once per idempotency key, so a repeated write is ignored.
CREATE TABLE usage_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account text NOT NULL,
  period date NOT NULL,
  amount_usd numeric(20, 9) NOT NULL,
  source text NOT NULL,
  idempotency_key text NOT NULL UNIQUE,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
);
CREATE INDEX usage_events_account_idx ON usage_events (account, created_at);
CREATE INDEX usage_events_period_idx ON usage_events (account, period);
