import { ASYNC_COMMIT, ASYNC_COMMIT_NAME } from '../db/async-commit.js';
import type { Database, Queryable } from '../db/database.js';

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
  /** The charge of each run (USD, above zero). */
  amountUsd: number;
  capUsd: number;
  /** One per charge asked for, in order of preference: identifies the reservation (release it with this). */
  tokens: string[];
  /**
   * Per token, the idempotency key of the usage event that will charge it, when known (null otherwise):
   * writing that event consumes the reservation.
   */
  usageKeys: (string | null)[];
  now: Date;
  expiresAt: Date;
}

export interface ReservationOutcome {
  /** How many charges were reserved: those of the first `granted` tokens (0: refused). */
  granted: number;
  /** The period's cost written so far, and the charges reserved by runs in progress (after this statement). */
  costUsd: number;
  reservedUsd: number;
}

/**
 * Reserves as many of the asked charges as the cap allows, in one statement: the upsert locks the account's
 * row, so concurrent admissions queue on it and each sees the reservations before it. Reservations of the
 * period past their expiry are dropped first. Near the cap a statement takes at most an eighth of the room
 * left (and at least one charge while one fits), so charges reserved ahead for one pool never keep another
 * process's runs out for long.
 */
export async function reserveCharges(q: Queryable, r: Reservation): Promise<ReservationOutcome> {
  if (!(r.amountUsd > 0)) throw new Error('a reserved charge must be above zero');
  if (r.tokens.length === 0 || r.tokens.length !== r.usageKeys.length) throw new Error('one usage key (or null) per token');
  const rows = await q.query<{ cost: string; reserved: string; granted: number }>(RESERVE_CHARGES,
    [r.account, r.period, r.amountUsd.toFixed(9), r.capUsd.toFixed(9), r.tokens, r.usageKeys.map((k) => k ?? ''),
      r.now.toISOString(), r.expiresAt.toISOString()]);
  const row = rows[0];
  return { granted: Number(row.granted), costUsd: round9(row.cost), reservedUsd: round9(row.reserved) };
}

/** Gives reservations back (their runs ended without writing their charges, or never started); a no-op for any already consumed. */
export async function releaseCharges(q: Queryable, tokens: string[]): Promise<void> {
  if (tokens.length > 0) await q.query(RELEASE_CHARGES, [tokens]);
}

/**
 * How many of the asked charges (`cardinality($5)`) are granted when `used` (cost plus live reservations) is
 * taken: all that fit while the room is eight times the ask, else an eighth of the room, at least one.
 */
const granted = (used: string) => {
  const room = `GREATEST(0, floor(($4::numeric - (${used})) / $3::numeric))`;
  return `LEAST(cardinality($5::text[]), GREATEST(LEAST(${room}, 1), floor(${room} / 8)))::int`;
};
const liveReserved = 'GREATEST(0, u.reserved_usd - (SELECT amount FROM freed))';

// Every run's admission runs this (or takes a charge this reserved ahead); on the embedded database it is a
// prepared statement, planned once: planning the reservation's CTE costs more than running it. Reservations
// and releases commit without waiting for the disk (src/db/async-commit.ts): a reservation lost in a crash
// charged nothing, and the run's own write, which waits, flushes it with itself; a release lost in a crash
// leaves its reservation to lapse at its expiry, as the reservations of runs a crash interrupted do.
const RESERVE_CHARGES = `WITH ${ASYNC_COMMIT}, expired AS (
       DELETE FROM usage_reservations WHERE account = $1 AND period = $2::date AND expires_at <= $7::timestamptz RETURNING amount_usd
     ), freed AS (
       SELECT COALESCE(sum(amount_usd), 0) AS amount FROM expired
     ), t AS (
       INSERT INTO usage_totals AS u (account, period, cost_usd, reserved_usd, last_granted)
       SELECT $1, $2::date, 0, ${granted('0')} * $3::numeric, ${granted('0')}
       ON CONFLICT (account, period) DO UPDATE SET
         reserved_usd = ${liveReserved} + ${granted(`u.cost_usd + ${liveReserved}`)} * $3::numeric,
         last_granted = ${granted(`u.cost_usd + ${liveReserved}`)}
       RETURNING u.cost_usd, u.reserved_usd, u.last_granted
     ), r AS (
       INSERT INTO usage_reservations (token, account, period, usage_key, amount_usd, expires_at)
       SELECT k.token, $1, $2::date, NULLIF(k.usage_key, ''), $3::numeric, $8::timestamptz
         FROM t, unnest($5::text[], $6::text[]) WITH ORDINALITY AS k(token, usage_key, ord)
        WHERE k.ord <= t.last_granted
     )
     SELECT t.cost_usd::text AS cost, t.reserved_usd::text AS reserved, t.last_granted AS granted FROM t CROSS JOIN ${ASYNC_COMMIT_NAME}`;

const RELEASE_CHARGES = `WITH ${ASYNC_COMMIT},
     gone AS (DELETE FROM usage_reservations USING ${ASYNC_COMMIT_NAME} WHERE token = ANY($1::text[]) RETURNING account, period, amount_usd),
     sums AS (SELECT account, period, sum(amount_usd) AS amount FROM gone GROUP BY account, period),
     eased AS (UPDATE usage_totals u SET reserved_usd = GREATEST(0, u.reserved_usd - s.amount)
       FROM sums s WHERE u.account = s.account AND u.period = s.period RETURNING 1)
     SELECT count(*)::int AS released FROM eased`;

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
