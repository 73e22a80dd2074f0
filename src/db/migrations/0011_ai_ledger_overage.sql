-- AI credits never go below zero. A settlement charges at most the deposit reserved for the request;
-- usage a provider reports beyond it is recorded as an 'overage' ledger entry (amount 0: not charged).
ALTER TABLE ai_credit_ledger DROP CONSTRAINT ai_credit_ledger_kind_check;
ALTER TABLE ai_credit_ledger ADD CONSTRAINT ai_credit_ledger_kind_check
  CHECK (kind IN ('grant', 'reserve', 'settle', 'release', 'overage'));

-- Balances taken below zero by uncapped settlements before this rule are written off (a grant that
-- brings them to zero, so the ledger still sums to the balance), then the database enforces the rule.
WITH neg AS (
  UPDATE ai_credit_balances SET balance_nano = 0, updated_at = date_trunc('milliseconds', clock_timestamp())
   WHERE balance_nano < 0
  RETURNING account, balance_nano
), old AS (
  SELECT account, balance_nano FROM ai_credit_balances WHERE balance_nano < 0
)
INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, note)
SELECT account, 'grant', -balance_nano, 0, 'negative balance from usage beyond the deposit written off' FROM old;

ALTER TABLE ai_credit_balances ADD CONSTRAINT ai_credit_balances_not_negative CHECK (balance_nano >= 0);
