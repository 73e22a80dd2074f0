-- AI gateway: credit balances, the ledger of every balance movement, request records, and the
-- usage events the limits capability reads for period cost.
-- Amounts are integers in nano-USD (1e-9 USD) so sums are exact; the API shows USD.

-- One row per billed account ('workspace:<id>' or 'user:<id>').
-- balance_nano is what can still be reserved (reservations already taken out);
-- reserved_nano is what open reservations hold.
CREATE TABLE ai_credit_balances (
  account text PRIMARY KEY,
  balance_nano bigint NOT NULL DEFAULT 0,
  reserved_nano bigint NOT NULL DEFAULT 0 CHECK (reserved_nano >= 0),
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
);

-- Every movement of a balance. amount_nano is the signed change to balance_nano, so the sum of
-- an account's entries equals its balance. A settle entry returns the deposit and takes the cost
-- (amount = deposit - cost); cost_nano keeps the cost itself.
CREATE TABLE ai_credit_ledger (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('grant', 'reserve', 'settle', 'release')),
  amount_nano bigint NOT NULL,
  balance_after_nano bigint NOT NULL,
  cost_nano bigint,
  request_id text,
  model text,
  note text,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
);
CREATE INDEX ai_credit_ledger_page_idx ON ai_credit_ledger (account, id DESC);

-- One row per chat-completion request that reserved a deposit.
CREATE TABLE ai_requests (
  id text PRIMARY KEY,
  account text NOT NULL,
  http_request_id text,
  source text NOT NULL DEFAULT 'api',
  workspace_id uuid,
  api_key_id uuid,
  model text NOT NULL,
  provider text NOT NULL,
  stream boolean NOT NULL DEFAULT false,
  status text NOT NULL CHECK (status IN ('reserved', 'settled', 'released')),
  deposit_nano bigint NOT NULL,
  cost_nano bigint,
  prompt_tokens integer,
  completion_tokens integer,
  usage_estimated boolean NOT NULL DEFAULT false,
  outcome text,
  error text,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  finished_at timestamptz
);

CREATE INDEX ai_requests_open_idx ON ai_requests (created_at) WHERE status = 'reserved';

