import type { Database, Queryable } from '../db/database.js';
import { runStatement, type SessionStatement } from '../db/session-function.js';

// The running usage total of each (billed account, billing period) and the base charges admission
// reserved against it (migration 0018). The totals follow usage_events through triggers, in the
// statement that writes each event; this file reads them, reserves and releases charges, and rebuilds
// them from the events (`weft usage reconcile`).

const round9 = (n: number | string | null | undefined) => Math.round(Number(n ?? 0) * 1e9) / 1e9;

/** The account's cost in a period (USD): one row by primary key, however many events the period holds. */
export async function totalCost(q: Queryable, account: string, period: string): Promise<number> {
  const rows = await q.query<{ cost: string }>(
    'SELECT cost_usd::text AS cost FROM usage_totals WHERE account = $1 AND period = $2::date', [account, period],
  );
  return round9(rows[0]?.cost);
}

export interface Reservation {
  account: string;
  period: string;
  amountUsd: number;
  capUsd: number;
  /** Identifies the reservation (release it with this). */
  token: string;
  /** The idempotency key of the usage event that will charge it, when known: writing that event consumes it. */
  usageKey: string | null;
  now: Date;
  expiresAt: Date;
}

export interface ReservationOutcome {
  admitted: boolean;
  /** The period's cost written so far, and the charges reserved by runs in progress (after this statement). */
  costUsd: number;
  reservedUsd: number;
}

/**
 * Reserves a charge only if the period's cost, the charges already reserved and this one stay within the
 * cap, in one statement: the upsert locks the account's row, so concurrent admissions queue on it and each
 * sees the reservations before it. Reservations of the period past their expiry are dropped first.
 */
export async function reserveCharge(q: Queryable, r: Reservation): Promise<ReservationOutcome> {
  const rows = await runStatement<{ cost: string; reserved: string; admitted: boolean }>(q, RESERVE_CHARGE,
    [r.account, r.period, r.amountUsd.toFixed(9), r.capUsd.toFixed(9), r.token, r.usageKey, r.now.toISOString(), r.expiresAt.toISOString()]);
  const row = rows[0];
  return { admitted: row.admitted, costUsd: round9(row.cost), reservedUsd: round9(row.reserved) };
}

/** Gives a reservation back (its run ended without writing its charge, or was refused by a later gate); a no-op once consumed. */
export async function releaseCharge(q: Queryable, token: string): Promise<void> {
  await runStatement(q, RELEASE_CHARGE, [token]);
}

// Every run's admission and end runs these two: on the embedded database they are session functions, planned
// once (src/db/session-function.ts); planning the reservation's CTE cost more than running it.
const RESERVE_CHARGE: SessionStatement = {
  name: 'weft_reserve_charge',
  args: 'text, date, numeric, numeric, text, text, timestamptz, timestamptz',
  returns: 'TABLE (cost text, reserved text, admitted boolean)',
  sql: `WITH expired AS (
       DELETE FROM usage_reservations WHERE account = $1 AND period = $2::date AND expires_at <= $7::timestamptz RETURNING amount_usd
     ), freed AS (
       SELECT COALESCE(sum(amount_usd), 0) AS amount FROM expired
     ), t AS (
       INSERT INTO usage_totals AS u (account, period, cost_usd, reserved_usd, last_admitted)
       SELECT $1, $2::date, 0, CASE WHEN $3::numeric <= $4::numeric THEN $3::numeric ELSE 0 END, $3::numeric <= $4::numeric
       ON CONFLICT (account, period) DO UPDATE SET
         reserved_usd = GREATEST(0, u.reserved_usd - (SELECT amount FROM freed))
           + CASE WHEN u.cost_usd + GREATEST(0, u.reserved_usd - (SELECT amount FROM freed)) + $3::numeric <= $4::numeric THEN $3::numeric ELSE 0 END,
         last_admitted = u.cost_usd + GREATEST(0, u.reserved_usd - (SELECT amount FROM freed)) + $3::numeric <= $4::numeric
       RETURNING u.cost_usd, u.reserved_usd, u.last_admitted
     ), r AS (
       INSERT INTO usage_reservations (token, account, period, usage_key, amount_usd, expires_at)
       SELECT $5, $1, $2::date, $6, $3::numeric, $8::timestamptz FROM t WHERE t.last_admitted
     )
     SELECT t.cost_usd::text AS cost, t.reserved_usd::text AS reserved, t.last_admitted AS admitted FROM t`,
};

const RELEASE_CHARGE: SessionStatement = {
  name: 'weft_release_charge',
  args: 'text',
  returns: 'TABLE (released int)',
  sql: `WITH gone AS (DELETE FROM usage_reservations WHERE token = $1 RETURNING account, period, amount_usd),
     eased AS (UPDATE usage_totals u SET reserved_usd = GREATEST(0, u.reserved_usd - g.amount_usd)
       FROM gone g WHERE u.account = g.account AND u.period = g.period RETURNING 1)
     SELECT count(*)::int AS released FROM eased`,
};

/** A total that disagreed with the sum of its events. */
export interface TotalDifference {
  account: string;
  period: string;
  /** What usage_totals held. */
  totalUsd: number;
  /** The sum of the period's usage_events (what it holds now). */
  eventsUsd: number;
}

/**
 * Rebuilds every total from usage_events and returns the ones that differed (before the fix). With `fix`
 * false it only reports. One transaction, the totals locked against concurrent charges meanwhile.
 */
export function reconcileTotals(db: Database, fix: boolean): Promise<{ checked: number; differences: TotalDifference[] }> {
  return db.tx((q) => reconcileIn(q, fix));
}

async function reconcileIn(q: Queryable, fix: boolean): Promise<{ checked: number; differences: TotalDifference[] }> {
  // Charges written meanwhile wait for this transaction (their triggers update usage_totals), so the
  // sums read here are the events' sums when the totals are set.
  if (fix) await q.query('LOCK TABLE usage_totals IN SHARE ROW EXCLUSIVE MODE');
  const rows = await q.query<{ account: string; period: string; total: string; events: string; differs: boolean }>(
    `SELECT COALESCE(t.account, e.account) AS account, to_char(COALESCE(t.period, e.period), 'YYYY-MM-DD') AS period,
            COALESCE(t.cost_usd, 0)::text AS total, COALESCE(e.cost, 0)::text AS events,
            COALESCE(t.cost_usd, 0) <> COALESCE(e.cost, 0) AS differs
       FROM usage_totals t
       FULL JOIN (SELECT account, period, sum(amount_usd) AS cost FROM usage_events GROUP BY account, period) e
         ON e.account = t.account AND e.period = t.period
      ORDER BY 1, 2`,
  );
  const differing = rows.filter((r) => r.differs);
  if (fix && differing.length > 0) {
    // The sums as numeric, never through a float: the fixed total is exactly the events' sum.
    await q.query(
      `INSERT INTO usage_totals AS u (account, period, cost_usd)
       SELECT d.account, d.period, COALESCE((SELECT sum(amount_usd) FROM usage_events e WHERE e.account = d.account AND e.period = d.period), 0)
         FROM jsonb_to_recordset($1::jsonb) AS d(account text, period date)
        ORDER BY d.account, d.period
       ON CONFLICT (account, period) DO UPDATE SET cost_usd = excluded.cost_usd`,
      [JSON.stringify(differing.map((d) => ({ account: d.account, period: d.period })))],
    );
  }
  return {
    checked: rows.length,
    differences: differing.map((r) => ({ account: r.account, period: r.period, totalUsd: round9(r.total), eventsUsd: round9(r.events) })),
  };
}
