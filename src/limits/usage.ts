import type { Queryable } from '../db/database.js';
import { BASE_RUN_CHARGE_USD } from './plans.js';

// The one writer of `usage_events` and the one definition of the billing period. Every area that
// bills (run base charges, the AI gateway's model tokens) writes through the functions here: either
// `recordCost` on its own, or `usageEventsInsertSql` composed into a statement that writes its own
// tables in the same transaction (the AI ledger's batched settlement).
//
// The billing period is decided in JavaScript from the caller's clock (the limits service's clock,
// which tests move), never by the database's `now()`: `billingPeriod(at)`, stored in the `period`
// column, and `periodCost` sums by that column.

/** The billing period a moment falls in: its calendar month (UTC), as the month's first day (YYYY-MM-01). */
export function billingPeriod(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

/** Cost of an account in the period of `at`: run base charges plus model tokens, USD. */
export async function periodCost(q: Queryable, account: string, at: Date): Promise<number> {
  const rows = await q.query<{ total: number | string }>(
    'SELECT COALESCE(sum(amount_usd), 0)::float8 AS total FROM usage_events WHERE account = $1 AND period = $2::date',
    [account, billingPeriod(at)],
  );
  return Math.round(Number(rows[0]?.total ?? 0) * 1e9) / 1e9;
}

export interface CostEvent {
  account: string;
  amountUsd: number;
  /** What the cost is for: 'run', 'ai', ... */
  source: string;
  /** A repeated key is ignored (the cost is recorded once). */
  idempotencyKey: string;
  /** The moment of the cost; its billing period is `billingPeriod(at)`. */
  at: Date;
  metadata?: Record<string, unknown>;
}

/** Records a cost once per idempotency key; a repeated write is ignored. True when it was recorded now. */
export async function recordCost(q: Queryable, e: CostEvent): Promise<boolean> {
  const rows = await q.query(
    `INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key, metadata)
     VALUES ($1, $2::date, $3::numeric, $4, $5, $6::jsonb) ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
    [e.account, billingPeriod(e.at), e.amountUsd.toFixed(9), e.source, e.idempotencyKey, JSON.stringify(e.metadata ?? {})],
  );
  return rows.length > 0;
}

/** The base charge (USD) recorded for each of some runs; runs never charged are absent. */
export async function runCharges(q: Queryable, executionIds: string[]): Promise<Map<string, number>> {
  if (executionIds.length === 0) return new Map();
  const rows = await q.query<{ key: string; amount: number | string }>(
    'SELECT idempotency_key AS key, amount_usd::float8 AS amount FROM usage_events WHERE idempotency_key = ANY($1::text[])',
    [executionIds.map((id) => `run:${id}`)],
  );
  return new Map(rows.map((r) => [r.key.slice('run:'.length), Number(r.amount)]));
}

export const recordRunCharge = (q: Queryable, account: string, executionId: string, at: Date) =>
  recordCost(q, { account, amountUsd: BASE_RUN_CHARGE_USD, source: 'run', idempotencyKey: `run:${executionId}`, at, metadata: { executionId } });

/** Records the base charges of several runs in one statement; returns the execution ids charged now (not before). */
export async function recordRunCharges(q: Queryable, runs: readonly { account: string; executionId: string }[], at: Date): Promise<Set<string>> {
  const rows = await q.query<{ key: string }>(
    `${usageEventsInsertSql('jsonb_to_recordset($1::jsonb) AS r(account text, execution_id text)', {
      account: 'r.account', period: '$2', amountUsd: '$3', source: "'run'", idempotencyKey: "'run:' || r.execution_id",
      metadata: "jsonb_build_object('executionId', r.execution_id)",
    })} RETURNING idempotency_key AS key`,
    [JSON.stringify(runs.map((r) => ({ account: r.account, execution_id: r.executionId }))), billingPeriod(at), BASE_RUN_CHARGE_USD.toFixed(9)],
  );
  return new Set(rows.map((r) => r.key.slice('run:'.length)));
}

/**
 * SQL expressions (over the rows of the relation the insert selects from) giving each column of a
 * usage event. `period` must evaluate to a value of `billingPeriod()` passed in as a parameter.
 */
export interface UsageEventColumns {
  account: string;
  period: string;
  /** USD as numeric. */
  amountUsd: string;
  source: string;
  idempotencyKey: string;
  /** jsonb. */
  metadata: string;
}

/**
 * An `INSERT INTO usage_events ... SELECT ... FROM <from>` for a writer that records costs inside its
 * own statement (a data-modifying CTE), with the same once-per-key rule as `recordCost`.
 */
export function usageEventsInsertSql(from: string, c: UsageEventColumns): string {
  return `INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key, metadata)
  SELECT ${c.account}, (${c.period})::date, (${c.amountUsd})::numeric, ${c.source}, ${c.idempotencyKey}, (${c.metadata})::jsonb
    FROM ${from}
  ON CONFLICT (idempotency_key) DO NOTHING`;
}

/**
 * Usage accounting on one clock (the limits service's, which tests move): the period a cost falls
 * in, recording costs, and the period's cost. Handed to every area that records costs.
 */
export class UsageRecorder {
  constructor(private readonly clock: { now(): number } = { now: () => Date.now() }) {}

  now(): Date {
    return new Date(this.clock.now());
  }

  /** The billing period of `at` (default: now on this clock). */
  period(at: Date = this.now()): string {
    return billingPeriod(at);
  }

  /** Records a cost at now on this clock (unless `at` is given), once per idempotency key. */
  record(q: Queryable, e: Omit<CostEvent, 'at'> & { at?: Date }): Promise<boolean> {
    return recordCost(q, { ...e, at: e.at ?? this.now() });
  }

  /** The account's cost in the current period. */
  currentCost(q: Queryable, account: string): Promise<number> {
    return periodCost(q, account, this.now());
  }
}
