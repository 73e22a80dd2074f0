import type { Database, Queryable } from '../db/database.js';

// Credit balances per billed account and the ledger of every movement. Amounts are integers in
// nano-USD (1e-9 USD). Each operation is one short statement or transaction: nothing here is held
// open across a provider call.
//
//   reserve:  balance -= deposit, reserved += deposit   (only if balance >= deposit)
//   settle:   balance += deposit - cost, reserved -= deposit, and a usage event for the cost
//   release:  balance += deposit, reserved -= deposit   (the provider failed; nothing is charged)
//   grant:    balance += amount                          (CLI, or starting credits)

export const NANO_PER_USD = 1_000_000_000;

export const usdToNano = (usd: number): number => Math.round(usd * NANO_PER_USD);
export const nanoToUsd = (nano: number): number => Number(nano) / NANO_PER_USD;

/** USD with 6 decimals, rounded half away from zero, computed on integers (no float drift). */
export function formatUsd(nano: number): string {
  const n = Math.round(Number(nano));
  const sign = n < 0 ? '-' : '';
  const micro = Math.round(Math.abs(n) / 1000);
  const whole = Math.floor(micro / 1_000_000);
  const frac = String(micro % 1_000_000).padStart(6, '0');
  return `${sign}${whole}.${frac}`;
}

/** A USD amount rounded to 6 decimals, as a JSON number. */
export const roundUsd = (nano: number): number => Number(formatUsd(nano));

export interface BalanceRow { account: string; balance_nano: number; reserved_nano: number; updated_at: Date }

export interface LedgerRow {
  id: number;
  account: string;
  kind: 'grant' | 'reserve' | 'settle' | 'release';
  amount_nano: number;
  balance_after_nano: number;
  cost_nano: number | null;
  request_id: string | null;
  model: string | null;
  note: string | null;
  created_at: Date;
}

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
}

export type ReserveResult = { ok: true; balanceAfterNano: number } | { ok: false; balanceNano: number };

const NOW = `date_trunc('milliseconds', clock_timestamp())`;

/**
 * Creates the account's balance on first use, with its starting credits recorded as a grant.
 * Returns true when it was created now.
 */
export async function ensureAccount(db: Database, account: string, startingNano: number): Promise<boolean> {
  return db.tx(async (q) => {
    const rows = await q.query<{ balance_nano: number }>(
      `INSERT INTO ai_credit_balances (account, balance_nano) VALUES ($1, $2::bigint)
       ON CONFLICT (account) DO NOTHING RETURNING balance_nano`,
      [account, startingNano],
    );
    if (rows.length === 0) return false;
    if (startingNano !== 0) {
      await q.query(
        `INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, note) VALUES ($1, 'grant', $2::bigint, $2::bigint, 'starting credits')`,
        [account, startingNano],
      );
    }
    return true;
  });
}

/** Adds (or with a negative amount, takes) credits. Returns the balance after. */
export async function grant(db: Database, account: string, amountNano: number, note: string | null = null): Promise<number> {
  return db.tx(async (q) => {
    const rows = await q.query<{ balance_nano: number }>(
      `INSERT INTO ai_credit_balances AS b (account, balance_nano) VALUES ($1, $2::bigint)
       ON CONFLICT (account) DO UPDATE SET balance_nano = b.balance_nano + $2::bigint, updated_at = ${NOW}
       RETURNING balance_nano::int8 AS balance_nano`,
      [account, amountNano],
    );
    const after = Number(rows[0].balance_nano);
    await q.query(
      `INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, note) VALUES ($1, 'grant', $2::bigint, $3::bigint, $4)`,
      [account, amountNano, after, note],
    );
    return after;
  });
}

// Reservations and releases commit without waiting for the WAL flush (synchronous_commit off for
// that statement only): losing one in a database crash loses nothing that was charged, and the
// settle, which commits synchronously, flushes every earlier record with it. This takes a disk
// flush off the path before the provider call on PostgreSQL.
const ASYNC_COMMIT = `a AS (SELECT set_config('synchronous_commit', 'off', true) AS v)`;

// Reservations and settlements of requests in flight at the same time are written together: one
// statement for every reservation waiting while the previous statement ran (group commit), and
// the same for settlements. A request alone is written at once, without waiting. Within a batch,
// the deposits of one account are taken in arrival order while their running sum fits the
// balance, so concurrent reservations can never take more than the balance holds. The balance
// rows are locked (FOR UPDATE) before they are read, which keeps this true across processes on
// PostgreSQL.

const reserveSql = `
WITH RECURSIVE ${ASYNC_COMMIT},
r AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    ord int, id text, account text, deposit bigint, model text, provider text, stream boolean, source text,
    http_request_id text, workspace_id uuid, api_key_id uuid)
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
  INSERT INTO ai_requests (id, account, http_request_id, source, workspace_id, api_key_id, model, provider, stream, status, deposit_nano)
  SELECT id, account, http_request_id, source, workspace_id, api_key_id, model, provider, stream, 'reserved', deposit FROM ok
)
SELECT g.ord, g.ok, g.left_after::int8 AS left_after FROM g CROSS JOIN a`;

async function reserveBatch(db: Queryable, items: ReserveInput[]): Promise<(ReserveResult | undefined)[]> {
  if (items.length === 1) return [await reserveOne(db, items[0])];
  const payload = items.map((i, ord) => ({
    ord, id: i.id, account: i.account, deposit: i.depositNano, model: i.model, provider: i.provider, stream: i.stream, source: i.source,
    http_request_id: i.httpRequestId ?? null, workspace_id: i.workspaceId ?? null, api_key_id: i.apiKeyId ?? null,
  }));
  const rows = await db.query<{ ord: number; ok: boolean; left_after: number }>(reserveSql, [JSON.stringify(payload)]);
  // Accounts without a balance row yet have no row here (undefined: the caller creates them).
  const out: (ReserveResult | undefined)[] = items.map(() => undefined);
  const left = new Map<string, number>();
  for (const r of [...rows].sort((a, b) => Number(a.ord) - Number(b.ord))) left.set(items[Number(r.ord)].account, Number(r.left_after));
  for (const r of rows) {
    const ord = Number(r.ord);
    out[ord] = r.ok ? { ok: true, balanceAfterNano: Number(r.left_after) } : { ok: false, balanceNano: left.get(items[ord].account) ?? Number(r.left_after) };
  }
  return out;
}

// The same operations for a single request: simpler statements, cheaper when nothing else is queued.
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
  INSERT INTO ai_requests (id, account, http_request_id, source, workspace_id, api_key_id, model, provider, stream, status, deposit_nano)
  SELECT $3, account, $5, $6, $7::uuid, $8::uuid, $4, $9, $10, 'reserved', $2::bigint FROM b
)
SELECT true AS ok, b.balance_nano::int8 AS left_after FROM b CROSS JOIN a
UNION ALL
SELECT false, balance_nano::int8 FROM ai_credit_balances WHERE account = $1 AND NOT EXISTS (SELECT 1 FROM b)`;

async function reserveOne(db: Queryable, i: ReserveInput): Promise<ReserveResult | undefined> {
  const rows = await db.query<{ ok: boolean; left_after: number }>(reserveOneSql, [
    i.account, i.depositNano, i.id, i.model, i.httpRequestId ?? null, i.source, i.workspaceId ?? null, i.apiKeyId ?? null, i.provider, i.stream,
  ]);
  const r = rows[0];
  if (!r) return undefined;
  return r.ok ? { ok: true, balanceAfterNano: Number(r.left_after) } : { ok: false, balanceNano: Number(r.left_after) };
}

const settleOneSql = `
WITH q AS (
  UPDATE ai_requests
     SET status = 'settled', cost_nano = $2::bigint, prompt_tokens = $3, completion_tokens = $4,
         usage_estimated = $5, outcome = $6, finished_at = ${NOW}
   WHERE id = $1 AND status = 'reserved'
  RETURNING id, account, deposit_nano, model, provider, source, workspace_id
), b AS (
  UPDATE ai_credit_balances AS c
     SET balance_nano = c.balance_nano + q.deposit_nano - $2::bigint, reserved_nano = c.reserved_nano - q.deposit_nano, updated_at = ${NOW}
    FROM q
   WHERE c.account = q.account
  RETURNING c.balance_nano, q.deposit_nano, q.account, q.id, q.model
), l AS (
  INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, cost_nano, request_id, model)
  SELECT account, 'settle', deposit_nano - $2::bigint, balance_nano, $2::bigint, id, model FROM b
), u AS (
  INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key, metadata)
  SELECT account, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $2::bigint::numeric / 1000000000, 'ai', 'ai:' || id,
         jsonb_build_object('model', model, 'provider', provider, 'via', source, 'workspaceId', workspace_id,
                            'promptTokens', $3::int, 'completionTokens', $4::int)
    FROM q
  ON CONFLICT (idempotency_key) DO NOTHING
)
SELECT balance_nano::int8 AS balance_nano, deposit_nano::int8 AS deposit_nano FROM b`;

async function settleOne(db: Queryable, id: string, input: SettleInput): Promise<SettleResult | undefined> {
  const rows = await db.query<{ balance_nano: number; deposit_nano: number }>(settleOneSql, [
    id, Math.max(0, Math.round(input.costNano)), input.promptTokens, input.completionTokens, input.estimated, input.outcome,
  ]);
  return rows[0] ? { balanceAfterNano: Number(rows[0].balance_nano), depositNano: Number(rows[0].deposit_nano) } : undefined;
}

/** Runs queued items in batches: whatever queued up while the previous batch ran goes next. */
class Batcher<I, O> {
  private pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private running = false;

  constructor(private readonly exec: (items: I[]) => Promise<O[]>, private readonly max = 200) {}

  run(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        // One turn of the event loop first: requests whose I/O is already waiting join the batch
        // (with PGlite a statement runs on this thread, so nothing else could queue meanwhile).
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, this.max);
        try {
          const out = await this.exec(batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(out[i]));
        } catch (err) {
          batch.forEach((b) => b.reject(err));
        }
      }
    } finally {
      this.running = false;
    }
  }
}

interface Batchers {
  reserve: Batcher<ReserveInput, ReserveResult | undefined>;
  settle: Batcher<{ id: string; input: SettleInput }, SettleResult | undefined>;
}
const batchers = new WeakMap<Queryable, Batchers>();

function batchersOf(db: Queryable): Batchers {
  let b = batchers.get(db);
  if (!b) {
    b = {
      reserve: new Batcher((items) => reserveBatch(db, items)),
      settle: new Batcher((items) => settleBatch(db, items)),
    };
    batchers.set(db, b);
  }
  return b;
}

/**
 * Takes the deposit from the balance if it covers it. Concurrent reservations can never take more
 * than the balance holds. An account used for the first time is created with `startingNano`.
 */
export async function reserve(db: Database, input: ReserveInput, startingNano = 0): Promise<ReserveResult> {
  const b = batchersOf(db);
  for (let attempt = 0; attempt < 2; attempt++) {
    const r = await b.reserve.run(input);
    if (r) return r;
    await ensureAccount(db, input.account, startingNano);
  }
  return { ok: false, balanceNano: (await getBalance(db, input.account))?.balanceNano ?? 0 };
}

export interface SettleInput {
  costNano: number;
  promptTokens: number;
  completionTokens: number;
  /** True when the tokens were estimated (no usage from the provider). */
  estimated: boolean;
  outcome: string;
}

export interface SettleResult { balanceAfterNano: number; depositNano: number }

const settleSql = `
WITH s AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(ord int, id text, cost bigint, prompt int, completion int, estimated boolean, outcome text)
), q AS (
  UPDATE ai_requests AS r
     SET status = 'settled', cost_nano = s.cost, prompt_tokens = s.prompt, completion_tokens = s.completion,
         usage_estimated = s.estimated, outcome = s.outcome, finished_at = ${NOW}
    FROM s
   WHERE r.id = s.id AND r.status = 'reserved'
  RETURNING r.id, r.account, r.deposit_nano, r.model, r.provider, r.source, r.workspace_id, s.ord, s.cost, s.prompt, s.completion
), b AS (
  SELECT account, balance_nano FROM ai_credit_balances WHERE account IN (SELECT account FROM q) FOR UPDATE
), c AS (
  SELECT q.*, b.balance_nano AS before, sum(q.deposit_nano - q.cost) OVER (PARTITION BY q.account ORDER BY q.ord) AS cum
    FROM q JOIN b ON b.account = q.account
), t AS (
  SELECT account, sum(deposit_nano)::bigint AS dep, sum(deposit_nano - cost)::bigint AS delta FROM q GROUP BY account
), u AS (
  UPDATE ai_credit_balances AS x
     SET balance_nano = x.balance_nano + t.delta, reserved_nano = x.reserved_nano - t.dep, updated_at = ${NOW}
    FROM t
   WHERE x.account = t.account
  RETURNING x.account
), l AS (
  INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, cost_nano, request_id, model)
  SELECT account, 'settle', deposit_nano - cost, before + cum, cost, id, model FROM c ORDER BY ord
), e AS (
  INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key, metadata)
  SELECT account, date_trunc('month', now() AT TIME ZONE 'UTC')::date, cost::numeric / 1000000000, 'ai', 'ai:' || id,
         jsonb_build_object('model', model, 'provider', provider, 'via', source, 'workspaceId', workspace_id,
                            'promptTokens', prompt, 'completionTokens', completion)
    FROM q
  ON CONFLICT (idempotency_key) DO NOTHING
)
SELECT ord, (before + cum)::int8 AS balance_after, deposit_nano::int8 AS deposit FROM c`;

async function settleBatch(db: Queryable, items: { id: string; input: SettleInput }[]): Promise<(SettleResult | undefined)[]> {
  if (items.length === 1) return [await settleOne(db, items[0].id, items[0].input)];
  const payload = items.map(({ id, input }, ord) => ({
    ord, id, cost: Math.max(0, Math.round(input.costNano)), prompt: input.promptTokens, completion: input.completionTokens,
    estimated: input.estimated, outcome: input.outcome,
  }));
  const rows = await db.query<{ ord: number; balance_after: number; deposit: number }>(settleSql, [JSON.stringify(payload)]);
  const out: (SettleResult | undefined)[] = items.map(() => undefined);
  for (const r of rows) out[Number(r.ord)] = { balanceAfterNano: Number(r.balance_after), depositNano: Number(r.deposit) };
  return out;
}

/** Replaces the deposit with the actual cost. Undefined when the request was not (or no longer) reserved. */
export async function settle(db: Queryable, id: string, input: SettleInput): Promise<SettleResult | undefined> {
  return batchersOf(db).settle.run({ id, input });
}

const releaseSql = `
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
SELECT b.balance_nano::int8 AS balance_nano FROM b CROSS JOIN a`;

/** Gives the whole deposit back (the request failed before anything was generated). */
export async function release(db: Queryable, id: string, outcome: string, error: string | null): Promise<number | undefined> {
  const rows = await db.query<{ balance_nano: number }>(releaseSql, [id, outcome, error ? error.slice(0, 1000) : null]);
  return rows[0] ? Number(rows[0].balance_nano) : undefined;
}

/** Releases reservations left open longer than `olderThanMs` (a process died mid-request). */
export async function releaseAbandoned(db: Database, olderThanMs: number): Promise<number> {
  const rows = await db.query<{ id: string }>(
    `SELECT id FROM ai_requests WHERE status = 'reserved' AND created_at < now() - ($1::int * interval '1 millisecond') LIMIT 500`,
    [olderThanMs],
  );
  let n = 0;
  for (const r of rows) if ((await release(db, r.id, 'abandoned', 'The request did not finish; its deposit was returned')) !== undefined) n++;
  return n;
}

export async function getBalance(db: Queryable, account: string): Promise<{ balanceNano: number; reservedNano: number; updatedAt: Date } | undefined> {
  const rows = await db.query<BalanceRow>(
    'SELECT account, balance_nano::int8 AS balance_nano, reserved_nano::int8 AS reserved_nano, updated_at FROM ai_credit_balances WHERE account = $1',
    [account],
  );
  const r = rows[0];
  return r ? { balanceNano: Number(r.balance_nano), reservedNano: Number(r.reserved_nano), updatedAt: r.updated_at } : undefined;
}

/** Ledger entries of an account, newest first, strictly before `beforeId` when given. */
export async function listLedger(db: Queryable, account: string, limit: number, beforeId?: number): Promise<LedgerRow[]> {
  const rows = await db.query<LedgerRow>(
    `SELECT id::int8 AS id, account, kind, amount_nano::int8 AS amount_nano, balance_after_nano::int8 AS balance_after_nano,
            cost_nano::int8 AS cost_nano, request_id, model, note, created_at
       FROM ai_credit_ledger
      WHERE account = $1 AND ($2::bigint IS NULL OR id < $2::bigint)
      ORDER BY id DESC
      LIMIT $3`,
    [account, beforeId ?? null, limit],
  );
  return rows.map((r) => ({
    ...r,
    id: Number(r.id),
    amount_nano: Number(r.amount_nano),
    balance_after_nano: Number(r.balance_after_nano),
    cost_nano: r.cost_nano === null ? null : Number(r.cost_nano),
  }));
}

/** Sum of the account's usage events since `since`, in USD (for the limits capability). */
export async function periodCost(db: Queryable, billedAccount: string, since: Date): Promise<number> {
  const rows = await db.query<{ total: number | string | null }>(
    'SELECT COALESCE(sum(amount_usd), 0)::float8 AS total FROM usage_events WHERE account = $1 AND created_at >= $2',
    [billedAccount, since.toISOString()],
  );
  return Number(rows[0]?.total ?? 0);
}

/**
 * Records a cost event once per idempotency key (a repeated key is ignored). For other areas that
 * bill through usage events; the gateway writes its own in `settle`.
 */
export async function recordUsageEvent(
  db: Queryable,
  e: { account: string; amountUsd: number; source: string; idempotencyKey: string; metadata?: Record<string, unknown>; at?: Date },
): Promise<boolean> {
  const at = (e.at ?? new Date()).toISOString();
  const rows = await db.query(
    `INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key, metadata, created_at)
     VALUES ($1, date_trunc('month', $6::timestamptz AT TIME ZONE 'UTC')::date, $2::numeric, $3, $4, $5::jsonb, $6::timestamptz)
     ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
    [e.account, e.amountUsd.toFixed(9), e.source, e.idempotencyKey, JSON.stringify(e.metadata ?? {}), at],
  );
  return rows.length > 0;
}
