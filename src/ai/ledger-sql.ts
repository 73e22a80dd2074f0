import type { Database, Queryable } from '../db/database.js';
import { ASYNC_COMMIT, ASYNC_COMMIT_NAME } from '../db/async-commit.js';
import { usageEventsInsertSql, type UsageEventColumns } from '../limits/usage.js';

// The statements of the credit ledger that run per request (reserve, settle, release), each for one
// request and, for reserve and settle, for a batch of requests in flight at the same time (group
// commit: one statement for every request that queued while the previous statement ran). Within a
// batch, the deposits of one account are taken in arrival order while their running sum fits the
// balance, so concurrent reservations can never take more than the balance holds. A batch locks its
// balance rows (FOR UPDATE, in account order) in a statement of its own before the batch statement
// reads them: on PostgreSQL a statement's snapshot may predate a settlement that committed while it
// waited for the lock, and reading the balance in a later statement of the same transaction is what
// makes the figures it computes (what fits, the ledger's balance_after) the ones it writes.
//
// A settlement charges the actual cost, AT MOST the deposit reserved for the request. Usage a
// provider reports beyond the deposit is not charged: it is written as an 'overage' ledger entry
// (amount 0, cost_nano = the part not charged). So a balance, never negative after a reservation,
// stays at or above zero after a settlement. The usage event records the actual cost (the usage cap
// is about real spend), with the billed amount and the overage in its metadata.

const NOW = `date_trunc('milliseconds', clock_timestamp())`;

// Reservations and releases commit without waiting for the WAL flush (src/db/async-commit.ts): losing one
// in a database crash loses nothing that was charged, and the settle, which commits synchronously, flushes
// every earlier record with it. This takes a disk flush off the path before the provider call.

export const OVERAGE_NOTE = `'Usage reported beyond the deposit; not charged'`;

export interface ReserveInput {
  id: string;
  account: string;
  depositNano: number;
  model: string;
  provider: string;
  stream: boolean;
  source: 'api' | 'workflow';
  httpRequestId?: string | null;
  workspaceId?: string | null;
  apiKeyId?: string | null;
  /** The run whose block made the call (stored execution id), recorded on the request and its usage event. */
  executionId?: string | null;
}

export type ReserveResult = { ok: true; balanceAfterNano: number } | { ok: false; balanceNano: number };

export interface SettleInput {
  /** The actual cost of the usage the provider reported (or that was estimated). */
  costNano: number;
  /** The part of `costNano` for prompt tokens (the rest is for completion tokens); 0 when not given. */
  inputCostNano?: number;
  promptTokens: number;
  completionTokens: number;
  /** True when the tokens were estimated (no usage from the provider). */
  estimated: boolean;
  outcome: string;
}

export interface SettleResult {
  balanceAfterNano: number;
  depositNano: number;
  /** What was taken from the balance: the cost, at most the deposit. */
  chargedNano: number;
  /** The part of the cost beyond the deposit, not charged (0 normally). */
  overageNano: number;
}

/** A settlement with its billing period (`billingPeriod()` of the settling moment). */
export interface SettleItem { id: string; input: SettleInput; period: string }

// ---------------------------------------------------------------------------------------------
// Reserve
// ---------------------------------------------------------------------------------------------

const reserveSql = `
WITH RECURSIVE ${ASYNC_COMMIT},
r AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    ord int, id text, account text, deposit bigint, model text, provider text, stream boolean, source text,
    http_request_id text, workspace_id uuid, api_key_id uuid, execution_id text)
), b AS (
  SELECT account, balance_nano FROM ai_credit_balances WHERE account IN (SELECT account FROM r) FOR UPDATE
), c AS (
  SELECT r.*, b.balance_nano AS before, row_number() OVER (PARTITION BY r.account ORDER BY r.ord) AS n
    FROM r JOIN b ON b.account = r.account
), g AS (
  -- In arrival order per account: a deposit is taken when it fits what is left.
  SELECT c.ord, c.account, c.n, c.deposit <= c.before AS ok,
         CASE WHEN c.deposit <= c.before THEN c.before - c.deposit ELSE c.before END AS left_after
    FROM c WHERE c.n = 1
  UNION ALL
  SELECT c.ord, c.account, c.n, c.deposit <= g.left_after,
         CASE WHEN c.deposit <= g.left_after THEN g.left_after - c.deposit ELSE g.left_after END
    FROM g JOIN c ON c.account = g.account AND c.n = g.n + 1
), ok AS (
  SELECT c.*, g.left_after FROM c JOIN g ON g.ord = c.ord WHERE g.ok
), t AS (
  SELECT account, sum(deposit)::bigint AS total FROM ok GROUP BY account
), u AS (
  UPDATE ai_credit_balances AS x
     SET balance_nano = x.balance_nano - t.total, reserved_nano = x.reserved_nano + t.total, updated_at = ${NOW}
    FROM t
   WHERE x.account = t.account
  RETURNING x.account
), l AS (
  INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, request_id, model)
  SELECT account, 'reserve', -deposit, left_after, id, model FROM ok ORDER BY ord
), q AS (
  INSERT INTO ai_requests (id, account, http_request_id, source, workspace_id, api_key_id, model, provider, stream, status, deposit_nano, execution_id)
  SELECT id, account, http_request_id, source, workspace_id, api_key_id, model, provider, stream, 'reserved', deposit, execution_id FROM ok
)
SELECT g.ord, g.ok, g.left_after::int8 AS left_after FROM g CROSS JOIN ${ASYNC_COMMIT_NAME}`;

// The same for a single request: simpler statements, cheaper when nothing else is queued.
const reserveOneSql = `
WITH ${ASYNC_COMMIT}, b AS (
  UPDATE ai_credit_balances
     SET balance_nano = balance_nano - $2::bigint, reserved_nano = reserved_nano + $2::bigint, updated_at = ${NOW}
   WHERE account = $1 AND balance_nano >= $2::bigint
  RETURNING account, balance_nano
), l AS (
  INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, request_id, model)
  SELECT account, 'reserve', -$2::bigint, balance_nano, $3, $4 FROM b
), r AS (
  INSERT INTO ai_requests (id, account, http_request_id, source, workspace_id, api_key_id, model, provider, stream, status, deposit_nano, execution_id)
  SELECT $3, account, $5, $6, $7::uuid, $8::uuid, $4, $9, $10, 'reserved', $2::bigint, $11::text FROM b
)
SELECT true AS ok, b.balance_nano::int8 AS left_after FROM b CROSS JOIN ${ASYNC_COMMIT_NAME}
UNION ALL
SELECT false, balance_nano::int8 FROM ai_credit_balances WHERE account = $1 AND NOT EXISTS (SELECT 1 FROM b)`;

/** Locks the balance rows of these accounts, in account order (no deadlock between two batches). */
async function lockBalances(q: Queryable, accounts: string[]): Promise<void> {
  await q.query('SELECT 1 FROM ai_credit_balances WHERE account = ANY($1::text[]) ORDER BY account FOR UPDATE', [[...new Set(accounts)]]);
}

/** Reservations of a batch; undefined for an account without a balance row yet (the caller creates it). */
export async function reserveBatch(db: Database, items: readonly ReserveInput[]): Promise<(ReserveResult | undefined)[]> {
  if (items.length === 1) return [await reserveOne(db, items[0])];
  const payload = items.map((i, ord) => ({
    ord, id: i.id, account: i.account, deposit: i.depositNano, model: i.model, provider: i.provider, stream: i.stream, source: i.source,
    http_request_id: i.httpRequestId ?? null, workspace_id: i.workspaceId ?? null, api_key_id: i.apiKeyId ?? null,
    execution_id: i.executionId ?? null,
  }));
  const rows = await db.tx(async (q) => {
    await lockBalances(q, items.map((i) => i.account));
    return q.query<{ ord: number; ok: boolean; left_after: number }>(reserveSql, [JSON.stringify(payload)]);
  });
  const out: (ReserveResult | undefined)[] = items.map(() => undefined);
  const left = new Map<string, number>();
  for (const r of [...rows].sort((a, b) => Number(a.ord) - Number(b.ord))) left.set(items[Number(r.ord)].account, Number(r.left_after));
  for (const r of rows) {
    const ord = Number(r.ord);
    out[ord] = r.ok ? { ok: true, balanceAfterNano: Number(r.left_after) } : { ok: false, balanceNano: left.get(items[ord].account) ?? Number(r.left_after) };
  }
  return out;
}

async function reserveOne(db: Queryable, i: ReserveInput): Promise<ReserveResult | undefined> {
  const rows = await db.query<{ ok: boolean; left_after: number }>(reserveOneSql, [
    i.account, i.depositNano, i.id, i.model, i.httpRequestId ?? null, i.source, i.workspaceId ?? null, i.apiKeyId ?? null, i.provider, i.stream,
    i.executionId ?? null,
  ]);
  const r = rows[0];
  if (!r) return undefined;
  return r.ok ? { ok: true, balanceAfterNano: Number(r.left_after) } : { ok: false, balanceNano: Number(r.left_after) };
}

// ---------------------------------------------------------------------------------------------
// Settle
// ---------------------------------------------------------------------------------------------

/**
 * The usage event of each settled request, over rows with id, account, model, provider, source, workspace_id,
 * execution_id, prompt, completion, cost, input_cost, charged and period (the in-database and the held ledgers
 * both write them).
 */
export const aiUsageEventColumns: UsageEventColumns = {
  account: 'account',
  period: 'period',
  amountUsd: 'cost::numeric / 1000000000',
  source: `'ai'`,
  idempotencyKey: `'ai:' || id`,
  metadata: `jsonb_build_object('model', model, 'provider', provider, 'via', source, 'workspaceId', workspace_id,
                                'promptTokens', prompt, 'completionTokens', completion, 'billedUsd', charged::numeric / 1000000000,
                                'inputUsd', LEAST(input_cost, cost)::numeric / 1000000000)
             || CASE WHEN cost > charged THEN jsonb_build_object('overageUsd', (cost - charged)::numeric / 1000000000) ELSE '{}'::jsonb END`,
  executionId: 'execution_id',
};
const settleUsageEvents = usageEventsInsertSql('q', aiUsageEventColumns);

const settleSql = `
WITH s AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(ord int, id text, cost bigint, input_cost bigint, prompt int, completion int, estimated boolean, outcome text, period text)
), q AS (
  UPDATE ai_requests AS r
     SET status = 'settled', cost_nano = LEAST(s.cost, r.deposit_nano), prompt_tokens = s.prompt, completion_tokens = s.completion,
         usage_estimated = s.estimated, outcome = s.outcome, finished_at = ${NOW}
    FROM s
   WHERE r.id = s.id AND r.status = 'reserved'
  RETURNING r.id, r.account, r.deposit_nano, r.model, r.provider, r.source, r.workspace_id, r.execution_id, r.cost_nano AS charged,
            s.ord, s.cost, s.input_cost, s.prompt, s.completion, s.period
), b AS (
  SELECT account, balance_nano FROM ai_credit_balances WHERE account IN (SELECT account FROM q) FOR UPDATE
), c AS (
  SELECT q.*, b.balance_nano AS before, sum(q.deposit_nano - q.charged) OVER (PARTITION BY q.account ORDER BY q.ord) AS cum
    FROM q JOIN b ON b.account = q.account
), t AS (
  SELECT account, sum(deposit_nano)::bigint AS dep, sum(deposit_nano - charged)::bigint AS delta FROM q GROUP BY account
), u AS (
  UPDATE ai_credit_balances AS x
     SET balance_nano = x.balance_nano + t.delta, reserved_nano = x.reserved_nano - t.dep, updated_at = ${NOW}
    FROM t
   WHERE x.account = t.account
  RETURNING x.account
), l AS (
  INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, cost_nano, request_id, model, note)
  SELECT account, kind, amount, balance_after, cost_nano, id, model, note FROM (
    SELECT ord, 0 AS k, account, 'settle' AS kind, deposit_nano - charged AS amount, before + cum AS balance_after, charged AS cost_nano, id, model, NULL::text AS note FROM c
    UNION ALL
    SELECT ord, 1, account, 'overage', 0, before + cum, cost - charged, id, model, ${OVERAGE_NOTE} FROM c WHERE cost > charged
  ) e ORDER BY ord, k
), e AS (
  ${settleUsageEvents}
)
SELECT ord, (before + cum)::int8 AS balance_after, deposit_nano::int8 AS deposit, charged::int8 AS charged, (cost - charged)::int8 AS overage FROM c`;

const settleOneSql = `
WITH s AS (
  SELECT $1::text AS id, $2::bigint AS cost, $3::int AS prompt, $4::int AS completion, $7::text AS period, $8::bigint AS input_cost
), q AS (
  UPDATE ai_requests AS r
     SET status = 'settled', cost_nano = LEAST(s.cost, r.deposit_nano), prompt_tokens = s.prompt, completion_tokens = s.completion,
         usage_estimated = $5, outcome = $6, finished_at = ${NOW}
    FROM s
   WHERE r.id = s.id AND r.status = 'reserved'
  RETURNING r.id, r.account, r.deposit_nano, r.model, r.provider, r.source, r.workspace_id, r.execution_id, r.cost_nano AS charged,
            s.cost, s.input_cost, s.prompt, s.completion, s.period
), b AS (
  UPDATE ai_credit_balances AS c
     SET balance_nano = c.balance_nano + q.deposit_nano - q.charged, reserved_nano = c.reserved_nano - q.deposit_nano, updated_at = ${NOW}
    FROM q
   WHERE c.account = q.account
  RETURNING c.balance_nano, q.deposit_nano, q.charged, q.cost, q.account, q.id, q.model
), l AS (
  INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, cost_nano, request_id, model, note)
  SELECT account, kind, amount, balance_nano, cost_nano, id, model, note FROM (
    SELECT 0 AS k, account, 'settle' AS kind, deposit_nano - charged AS amount, balance_nano, charged AS cost_nano, id, model, NULL::text AS note FROM b
    UNION ALL
    SELECT 1, account, 'overage', 0, balance_nano, cost - charged, id, model, ${OVERAGE_NOTE} FROM b WHERE cost > charged
  ) e ORDER BY k
), e AS (
  ${settleUsageEvents}
)
SELECT balance_nano::int8 AS balance_after, deposit_nano::int8 AS deposit, charged::int8 AS charged, (cost - charged)::int8 AS overage FROM b`;

type SettleRow = { balance_after: number; deposit: number; charged: number; overage: number };
const settleResult = (r: SettleRow): SettleResult => ({
  balanceAfterNano: Number(r.balance_after), depositNano: Number(r.deposit), chargedNano: Number(r.charged), overageNano: Number(r.overage),
});

const costOf = (input: SettleInput): number => Math.max(0, Math.round(input.costNano));
export const inputCostOf = (input: SettleInput): number => Math.min(costOf(input), Math.max(0, Math.round(input.inputCostNano ?? 0)));

/** Settlements of a batch; undefined for a request that was not (or no longer) reserved. */
export async function settleBatch(db: Database, items: readonly SettleItem[]): Promise<(SettleResult | undefined)[]> {
  if (items.length === 1) {
    const { id, input, period } = items[0];
    const rows = await db.query<SettleRow>(settleOneSql, [
      id, costOf(input), input.promptTokens, input.completionTokens, input.estimated, input.outcome, period, inputCostOf(input),
    ]);
    return [rows[0] ? settleResult(rows[0]) : undefined];
  }
  const payload = items.map(({ id, input, period }, ord) => ({
    ord, id, cost: costOf(input), input_cost: inputCostOf(input), prompt: input.promptTokens, completion: input.completionTokens,
    estimated: input.estimated, outcome: input.outcome, period,
  }));
  const rows = await db.tx(async (q) => {
    const accounts = await q.query<{ account: string }>('SELECT DISTINCT account FROM ai_requests WHERE id = ANY($1::text[])', [items.map((i) => i.id)]);
    await lockBalances(q, accounts.map((a) => a.account));
    return q.query<SettleRow & { ord: number }>(settleSql, [JSON.stringify(payload)]);
  });
  const out: (SettleResult | undefined)[] = items.map(() => undefined);
  for (const r of rows) out[Number(r.ord)] = settleResult(r);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Release
// ---------------------------------------------------------------------------------------------

export const releaseSql = `
WITH ${ASYNC_COMMIT}, q AS (
  UPDATE ai_requests SET status = 'released', cost_nano = 0, outcome = $2, error = $3, finished_at = ${NOW}
   WHERE id = $1 AND status = 'reserved'
  RETURNING id, account, deposit_nano, model
), b AS (
  UPDATE ai_credit_balances AS c
     SET balance_nano = c.balance_nano + q.deposit_nano, reserved_nano = c.reserved_nano - q.deposit_nano, updated_at = ${NOW}
    FROM q
   WHERE c.account = q.account
  RETURNING c.balance_nano, q.deposit_nano, q.account, q.id, q.model
), l AS (
  INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, request_id, model, note)
  SELECT account, 'release', deposit_nano, balance_nano, id, model, $2 FROM b
)
SELECT b.balance_nano::int8 AS balance_nano FROM b CROSS JOIN ${ASYNC_COMMIT_NAME}`;
