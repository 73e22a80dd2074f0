import { z } from 'zod';
import type { AccessControlled } from '../accounts/service.js';
import type { Queryable } from '../db/database.js';
import type { AuthContext } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { BASE_RUN_CHARGE_USD } from './plans.js';
import { totalCost } from './usage-totals.js';

// The one writer of `usage_events` and the one definition of the billing period. Every area that
// bills (run base charges, the AI gateway's model tokens) writes through the functions here: either
// `recordCost` on its own, or `usageEventsInsertSql` composed into a statement that writes its own
// tables in the same transaction (the AI ledger's batched settlement).
//
// The billing period is decided in JavaScript from the caller's clock (the limits service's clock,
// which tests move), never by the database's `now()`: `billingPeriod(at)`, stored in the `period`
// column. Every event is added to its (account, period) running total in the statement that writes it
// (triggers of migration 0018, see usage-totals.ts), and `periodCost` reads that total: no request sums
// events.

/** The billing period a moment falls in: its calendar month (UTC), as the month's first day (YYYY-MM-01). */
export function billingPeriod(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

/** Cost of an account in the period of `at`: run base charges plus model tokens, USD (the running total, one row). */
export function periodCost(q: Queryable, account: string, at: Date): Promise<number> {
  return totalCost(q, account, billingPeriod(at));
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
  /** The run that spent it (stored execution id), when a run did: the run's cost adds it up. */
  executionId?: string | null;
}

/** Records a cost once per idempotency key; a repeated write is ignored. True when it was recorded now. */
export async function recordCost(q: Queryable, e: CostEvent): Promise<boolean> {
  const rows = await q.query(
    `INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key, metadata, execution_id)
     VALUES ($1, $2::date, $3::numeric, $4, $5, $6::jsonb, $7) ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
    [e.account, billingPeriod(e.at), e.amountUsd.toFixed(9), e.source, e.idempotencyKey, JSON.stringify(e.metadata ?? {}), e.executionId ?? null],
  );
  return rows.length > 0;
}

/** The idempotency key of a run's base charge (its usage event; admission reserves the charge under it). */
export const runUsageKey = (executionId: string): string => `run:${executionId}`;

/** The base charge (USD) recorded for each of some runs; runs never charged are absent. */
export async function runCharges(q: Queryable, executionIds: string[]): Promise<Map<string, number>> {
  if (executionIds.length === 0) return new Map();
  const rows = await q.query<{ key: string; amount: number | string }>(
    'SELECT idempotency_key AS key, amount_usd::float8 AS amount FROM usage_events WHERE idempotency_key = ANY($1::text[])',
    [executionIds.map(runUsageKey)],
  );
  return new Map(rows.map((r) => [r.key.slice('run:'.length), Number(r.amount)]));
}

export const recordRunCharge = (q: Queryable, account: string, executionId: string, at: Date) =>
  recordCost(q, { account, amountUsd: BASE_RUN_CHARGE_USD, source: 'run', idempotencyKey: runUsageKey(executionId), at, metadata: { executionId }, executionId });

/**
 * The base charge of runs written by the same statement: inserts the usage events of the rows of CTE `from`
 * (columns id, billed_account), with the billing period as $2 and the amount as $3, once per run, and
 * returns the `idempotency_key`, `account` and `amount_usd` of each event recorded now.
 */
export function runChargesSql(from: string): string {
  return `${usageEventsInsertSql(from, {
    account: `${from}.billed_account`, period: '$2', amountUsd: '$3', source: "'run'", idempotencyKey: `'run:' || ${from}.id`,
    metadata: `jsonb_build_object('executionId', ${from}.id)`, executionId: `${from}.id`,
  })} RETURNING idempotency_key, account, amount_usd`;
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
  /** text: the stored execution id of the run that spent it, or NULL. */
  executionId: string;
}

/**
 * An `INSERT INTO usage_events ... SELECT ... FROM <from>` for a writer that records costs inside its
 * own statement (a data-modifying CTE), with the same once-per-key rule as `recordCost`.
 */
export function usageEventsInsertSql(from: string, c: UsageEventColumns): string {
  return `INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key, metadata, execution_id)
  SELECT ${c.account}, (${c.period})::date, (${c.amountUsd})::numeric, ${c.source}, ${c.idempotencyKey}, (${c.metadata})::jsonb, (${c.executionId})::text
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

/** One UTC calendar day of an account's usage: its cost (USD) and the runs charged that day. */
export interface DayUsage {
  date: string;
  costUsd: number;
  runs: number;
}

const DAY_MS = 86_400_000;

/**
 * An account's usage per UTC day over the `days` days ending on the day of `now`, oldest first, every
 * day present (zeros included). Grouped by each event's `created_at` (the database's clock, the moment
 * it was written): the billing `period` column is a month, too coarse for a day. `runs` counts the run
 * base charges of the day. One statement, on the (account, created_at) index.
 */
export async function dailyUsage(q: Queryable, account: string, days: number, now: Date): Promise<DayUsage[]> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = new Date(today - (days - 1) * DAY_MS);
  const until = new Date(today + DAY_MS);
  const rows = await q.query<{ day: string; cost: number | string; runs: number }>(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, sum(amount_usd)::float8 AS cost,
            (count(*) FILTER (WHERE source = 'run'))::int AS runs
       FROM usage_events
      WHERE account = $1 AND created_at >= $2::timestamptz AND created_at < $3::timestamptz
      GROUP BY 1`,
    [account, from.toISOString(), until.toISOString()],
  );
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const out: DayUsage[] = [];
  for (let i = 0; i < days; i++) {
    const date = new Date(from.getTime() + i * DAY_MS).toISOString().slice(0, 10);
    const r = byDay.get(date);
    out.push({ date, costUsd: r ? Math.round(Number(r.cost) * 1e9) / 1e9 : 0, runs: r ? Number(r.runs) : 0 });
  }
  return out;
}

// Reading a workspace's own account (the usage-limits, credits and daily usage routes of several areas
// share the rule, so it lives here, beside the usage it guards).

/** A workspace id parameter: a UUID, else 400 (no lookup: the value cannot name a workspace). */
export const workspaceIdParam = z.string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'workspaceId must be a UUID');

/**
 * The workspace's own billed account (`workspace:<id>`), for a caller allowed to see it: an admin of the
 * workspace, or a workspace key of it (whose runs that account pays for anyway). A workspace the caller
 * cannot reach is a 404 like a missing one; a member below admin gets 403.
 */
export async function workspaceAccountOf(accounts: AccessControlled, auth: AuthContext | undefined, workspaceId: string): Promise<{ account: string; workspaceId: string }> {
  const access = await accounts.authorize(auth, workspaceId, 'read', { conceal: true });
  if (access.keyType !== 'workspace' && access.role !== 'admin') {
    throw new HttpError(403, "Only the workspace's admins may see its billed account", { v2Details: { code: 'INSUFFICIENT_WORKSPACE_ROLE' } });
  }
  return { account: `workspace:${access.workspaceId}`, workspaceId: access.workspaceId };
}
