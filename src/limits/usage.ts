import type { Queryable } from '../db/database.js';
import { BASE_RUN_CHARGE_USD } from './plans.js';

/** The billing period a moment falls in: its calendar month (UTC), as the month's first day. */
export function billingPeriod(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

/** Cost of an account in the period of `at`: run base charges plus model tokens. */
export async function periodCost(q: Queryable, account: string, at: Date): Promise<number> {
  const rows = await q.query<{ total: number | string }>(
    'SELECT COALESCE(sum(amount_usd), 0)::float8 AS total FROM usage_events WHERE account = $1 AND period = $2::date',
    [account, billingPeriod(at)],
  );
  return Math.round(Number(rows[0]?.total ?? 0) * 1e9) / 1e9;
}

/** Records a cost once per idempotency key; a repeated write is ignored. */
export async function recordCost(
  q: Queryable,
  e: { account: string; amountUsd: number; source: string; idempotencyKey: string; at: Date; metadata?: Record<string, unknown> },
): Promise<boolean> {
  const rows = await q.query(
    `INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key, metadata)
     VALUES ($1, $2::date, $3, $4, $5, $6) ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
    [e.account, billingPeriod(e.at), e.amountUsd, e.source, e.idempotencyKey, JSON.stringify(e.metadata ?? {})],
  );
  return rows.length > 0;
}

export const recordRunCharge = (q: Queryable, account: string, executionId: string, at: Date) =>
  recordCost(q, { account, amountUsd: BASE_RUN_CHARGE_USD, source: 'run', idempotencyKey: `run:${executionId}`, at, metadata: { executionId } });
