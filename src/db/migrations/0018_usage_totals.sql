-- Usage per billed account and billing period as a running total (issue 30: nothing on a request path
-- sums usage_events any more), and the base charges that admission reserved for runs in progress
-- (issue 27: a run is admitted only if its charge still fits under the cap, checked and reserved in
-- one statement).
--
-- cost_usd is the sum of the account's usage_events in the period. Triggers on usage_events keep it so
-- in the statement that writes an event, whichever area writes it and however (a plain insert, or an
-- insert inside a group-committed data-modifying CTE), so the total can never disagree with the events
-- it is built from; `weft usage reconcile` rebuilds it from them and reports any difference.
-- reserved_usd is the sum of usage_reservations' amounts for the period: charges admitted and not
-- written yet.
CREATE TABLE usage_totals (
  account text NOT NULL,
  period date NOT NULL,
  cost_usd numeric(20, 9) NOT NULL DEFAULT 0,
  reserved_usd numeric(20, 9) NOT NULL DEFAULT 0,
  -- Whether the last admission statement on this row reserved its charge (set by that statement).
  last_admitted boolean NOT NULL DEFAULT true,
  PRIMARY KEY (account, period)
);

INSERT INTO usage_totals (account, period, cost_usd)
SELECT account, period, sum(amount_usd) FROM usage_events GROUP BY account, period;

-- One row per admitted run whose base charge is not written yet. usage_key is the idempotency key its
-- charge will carry (`run:<execution id>`) when admission knew it: writing that usage event consumes
-- the reservation in the same statement. Any other reservation is released when its run ends, or
-- lapses at expires_at (its process died).
CREATE TABLE usage_reservations (
  token text PRIMARY KEY,
  account text NOT NULL,
  period date NOT NULL,
  usage_key text,
  amount_usd numeric(20, 9) NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX usage_reservations_key_idx ON usage_reservations (usage_key) WHERE usage_key IS NOT NULL;
CREATE INDEX usage_reservations_expiry_idx ON usage_reservations (account, period, expires_at);

-- New events: add them to their totals, and consume the reservations of the run charges among them.
-- One upsert in (account, period) order, so concurrent batches lock totals in the same order.
CREATE FUNCTION usage_totals_add_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH consumed AS (
    DELETE FROM usage_reservations r USING added a WHERE r.usage_key = a.idempotency_key
    RETURNING r.account, r.period, r.amount_usd
  ), delta AS (
    SELECT account, period, sum(cost) AS cost, sum(freed) AS freed FROM (
      SELECT account, period, amount_usd AS cost, 0::numeric AS freed FROM added
      UNION ALL
      SELECT account, period, 0::numeric, amount_usd FROM consumed
    ) x GROUP BY account, period
  )
  INSERT INTO usage_totals AS u (account, period, cost_usd)
  SELECT account, period, cost FROM delta ORDER BY account, period
  ON CONFLICT (account, period) DO UPDATE SET
    cost_usd = u.cost_usd + excluded.cost_usd,
    reserved_usd = GREATEST(0, u.reserved_usd - (SELECT d.freed FROM delta d WHERE d.account = u.account AND d.period = u.period));
  RETURN NULL;
END
$$;

CREATE TRIGGER usage_events_add_to_totals AFTER INSERT ON usage_events
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION usage_totals_add_events();

-- Removed events (an operator's correction) leave their totals too.
CREATE FUNCTION usage_totals_remove_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_totals AS u (account, period, cost_usd)
  SELECT account, period, -sum(amount_usd) FROM removed GROUP BY account, period ORDER BY account, period
  ON CONFLICT (account, period) DO UPDATE SET cost_usd = u.cost_usd + excluded.cost_usd;
  RETURN NULL;
END
$$;

CREATE TRIGGER usage_events_remove_from_totals AFTER DELETE ON usage_events
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION usage_totals_remove_events();
