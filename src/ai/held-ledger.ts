import type { Database } from '../db/database.js';
import { GroupCommit } from '../db/group-commit.js';
import { UsageRecorder, usageEventsInsertSql } from '../limits/usage.js';
import { aiUsageEventColumns, inputCostOf, OVERAGE_NOTE, type ReserveInput, type ReserveResult, type SettleInput, type SettleResult } from './ledger-sql.js';

// The credit ledger for a database that this process alone writes (the embedded one: its data directory is
// locked to one process). Deposits are held in memory, against the balance as the database last reported
// it, so a request reaches its provider without a database statement; what happened is written once, when
// the request ends, as one statement per batch of requests ending together (group commit): the request row,
// its reserve and settle (or release) ledger entries, the balance and the usage event. Each caller answers
// only after that statement commits, so a settled charge is never lost; a crash mid-request loses only a
// deposit that was never charged. With a settle window (WEFT_AI_SETTLE_WINDOW_MS), a settlement is answered
// from memory and written within the window, together with the others ending in it: what it charges stays
// held (counted against the balance) until its write commits, so no deposit can take it; a crash then loses
// at most the window's charges (the operator's loss: the balance keeps them). docs/architecture.md, Credit ledgers.
//
// The balance a deposit is checked against is the database's, refreshed by every write of this ledger and
// dropped by `forgetBalance` (grants), so two deposits can never take more than the balance holds. The
// database's balance still counts the deposits held here: a change that lowers it (a negative grant) runs
// through `changeWithDepositsHeld`, which stops new deposits meanwhile and tells it what is held. Should the
// balance still fall below what the requests in flight are charged, a settlement charges what is left and
// records the rest as overage, as for usage beyond a deposit: it never fails for a balance change.

const NOW = `date_trunc('milliseconds', clock_timestamp())`;

/** One finished request, as the batch statement writes it. */
interface Ended {
  id: string;
  hold: ReserveInput;
  reservedAt: Date;
  /** settled: the provider answered (charged at most the deposit); released: it failed, nothing charged. */
  status: 'settled' | 'released';
  costNano: number;
  /** The part of `costNano` for prompt tokens. */
  inputCostNano: number;
  /** What the request owes: its cost, at most its deposit (the statement takes at most what the balance holds). */
  chargedNano: number;
  promptTokens: number | null;
  completionTokens: number | null;
  estimated: boolean;
  outcome: string;
  error: string | null;
  period: string;
}

interface Written { balanceAfterNano: number; accountBalanceNano: number; chargedNano: number }

interface AccountState {
  /** The balance as the database last reported it; undefined until read (or after a grant). */
  balance?: number;
  /** Deposits of requests in flight. */
  held: number;
  /** Bumped whenever the balance is set or dropped, so that a read that raced with a write is not kept. */
  epoch: number;
  loading?: Promise<void>;
  /** Balance changes under way (`changeWithDepositsHeld`); new deposits wait for `resumed`. */
  pauses: number;
  resumed?: { promise: Promise<void>; resolve: () => void };
}

const usageEvents = usageEventsInsertSql('cs', aiUsageEventColumns);

const BALANCE_SHORT_NOTE = `'The balance was lowered under the deposits in flight; the rest was not charged'`;


// Within a batch, each account's requests are charged in order: after_k = balance before - the charges up to k.
// A request is charged what it owes (`want`: its cost, at most its deposit) while the balance lasts: a balance
// lowered under the deposits in flight charges the rest of them only what is left (never below zero).
const endSql = `
WITH r AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    ord int, id text, account text, deposit bigint, want bigint, cost bigint, input_cost bigint, prompt int, completion int, estimated boolean,
    status text, outcome text, error text, period text, model text, provider text, stream boolean, source text,
    http_request_id text, workspace_id uuid, api_key_id uuid, execution_id text, reserved_at timestamptz)
), w AS (
  SELECT r.*, b.balance_nano AS before, sum(r.want) OVER (PARTITION BY r.account ORDER BY r.ord) AS want_upto
    FROM r JOIN ai_credit_balances b ON b.account = r.account
), k AS (
  SELECT w.*, GREATEST(0, LEAST(want_upto, before) - LEAST(want_upto - want, before)) AS charged FROM w
), t AS (
  SELECT account, sum(charged)::bigint AS total FROM k GROUP BY account
), u AS (
  UPDATE ai_credit_balances AS x SET balance_nano = x.balance_nano - t.total, updated_at = ${NOW}
    FROM t WHERE x.account = t.account
  RETURNING x.account, x.balance_nano AS after
), c AS (
  SELECT k.*, u.after AS account_after, k.before - sum(k.charged) OVER (PARTITION BY k.account ORDER BY k.ord) AS after_k
    FROM k JOIN u ON u.account = k.account
), q AS (
  INSERT INTO ai_requests (id, account, http_request_id, source, workspace_id, api_key_id, model, provider, stream, status, deposit_nano,
                           cost_nano, prompt_tokens, completion_tokens, usage_estimated, outcome, error, created_at, finished_at, execution_id)
  SELECT id, account, http_request_id, source, workspace_id, api_key_id, model, provider, stream, status, deposit,
         charged, prompt, completion, estimated, outcome, error, reserved_at, ${NOW}, execution_id FROM c
), l AS (
  INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, cost_nano, request_id, model, note)
  SELECT account, kind, amount, balance_after, cost_nano, id, model, note FROM (
    SELECT ord, 0 AS k, account, 'reserve' AS kind, -deposit AS amount, GREATEST(0, after_k + charged - deposit) AS balance_after,
           NULL::bigint AS cost_nano, id, model, NULL::text AS note FROM c
    UNION ALL
    SELECT ord, 1, account, 'settle', deposit - charged, after_k, charged, id, model, NULL FROM c WHERE status = 'settled'
    UNION ALL
    SELECT ord, 1, account, 'release', deposit, after_k, NULL, id, model, outcome FROM c WHERE status = 'released'
    UNION ALL
    SELECT ord, 2, account, 'overage', 0, after_k, cost - charged, id, model,
           CASE WHEN want > charged THEN ${BALANCE_SHORT_NOTE} ELSE ${OVERAGE_NOTE} END
      FROM c WHERE status = 'settled' AND cost > charged
  ) e ORDER BY ord, k
), cs AS (
  SELECT * FROM c WHERE status = 'settled'
), e AS (
  ${usageEvents}
)
SELECT ord, after_k::int8 AS after_k, account_after::int8 AS account_after, charged::int8 AS charged FROM c`;

type EndRow = { ord: number; after_k: number; account_after: number; charged: number };

/** Every held ledger of a database, so that a grant made through any path drops the balances they hold. */
const ledgersOf = new WeakMap<Database, Set<HeldCreditLedger>>();

/** A grant or another direct change of `account`'s balance: ledgers holding deposits re-read it. */
export function forgetBalance(db: Database, account: string): void {
  for (const ledger of ledgersOf.get(db) ?? []) ledger.forget(account);
}

/**
 * Runs `change` (a statement lowering `account`'s balance) with no new deposit taken meanwhile, handing it
 * the deposits held in memory (which the database's balance still counts), then makes the ledgers re-read
 * the balance. A deposit ending meanwhile only makes that figure too high, never too low.
 */
export async function changeWithDepositsHeld<T>(db: Database, account: string, change: (heldNano: number) => Promise<T>): Promise<T> {
  const ledgers = [...(ledgersOf.get(db) ?? [])];
  const resumes = ledgers.map((l) => l.pause(account));
  try {
    return await change(ledgers.reduce((sum, l) => sum + l.heldNano(account), 0));
  } finally {
    for (const l of ledgers) l.forget(account);
    for (const resume of resumes) resume();
  }
}

export interface HeldCreditLedgerOptions {
  /** Creates the account's balance row (with its starting credits) when missing. */
  ensureAccount: (account: string) => Promise<unknown>;
  /** Reads the account's balance row. */
  readBalance: (account: string) => Promise<number | undefined>;
  usage?: UsageRecorder;
  /** Settlements are written within this delay after their answer (0: before it). */
  settleWindowMs?: number;
  /** A settlement written after its answer failed to be written (its charge is lost). */
  onLostSettlement?: (err: unknown, requestId: string) => void;
}

export class HeldCreditLedger {
  private readonly accounts = new Map<string, AccountState>();
  private readonly open = new Map<string, { hold: ReserveInput; reservedAt: Date }>();
  private readonly ends: GroupCommit<Ended, Written>;
  private readonly usage: UsageRecorder;
  private readonly deferred: boolean;

  constructor(private readonly db: Database, private readonly opts: HeldCreditLedgerOptions) {
    this.usage = opts.usage ?? new UsageRecorder();
    this.deferred = (opts.settleWindowMs ?? 0) > 0;
    this.ends = new GroupCommit({
      writeBatch: (items) => this.write(items),
      writeOne: async (item) => (await this.write([item]))[0],
      windowMs: opts.settleWindowMs,
    });
    const set = ledgersOf.get(db) ?? new Set();
    set.add(this);
    ledgersOf.set(db, set);
  }

  /** Writes the settlements waiting for their window (shutdown). */
  flush(): Promise<void> {
    return this.ends.flush();
  }

  /** Deposits of `account`'s requests in flight, and charges not yet written (not in the database). */
  heldNano(account: string): number {
    return this.accounts.get(account)?.held ?? 0;
  }

  forget(account: string): void {
    const s = this.accounts.get(account);
    if (!s) return;
    s.balance = undefined;
    s.epoch++;
  }

  /** Holds new deposits of `account` back until the returned function is called. */
  pause(account: string): () => void {
    const s = this.state(account);
    s.pauses++;
    if (!s.resumed) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((r) => (resolve = r));
      s.resumed = { promise, resolve };
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--s.pauses > 0) return;
      const resumed = s.resumed;
      s.resumed = undefined;
      resumed?.resolve();
    };
  }

  async reserve(input: ReserveInput): Promise<ReserveResult> {
    const s = this.state(input.account);
    let balance: number;
    for (;;) {
      if (s.resumed) await s.resumed.promise;
      balance = await this.balanceOf(input.account, s);
      // A balance change began while the balance was read: wait for it and read the new one.
      if (!s.resumed) break;
    }
    const available = balance - s.held;
    if (input.depositNano > available) return { ok: false, balanceNano: Math.max(0, available) };
    s.held += input.depositNano;
    this.open.set(input.id, { hold: input, reservedAt: new Date() });
    return { ok: true, balanceAfterNano: available - input.depositNano };
  }

  /** Charges the cost, at most the deposit. Undefined when `id` holds no deposit (never reserved, or already ended). */
  async settle(id: string, input: SettleInput): Promise<SettleResult | undefined> {
    const cost = Math.max(0, Math.round(input.costNano));
    const r = await this.end(id, (hold) => ({
      status: 'settled', costNano: cost, inputCostNano: inputCostOf(input), chargedNano: Math.min(cost, hold.depositNano), promptTokens: input.promptTokens,
      completionTokens: input.completionTokens, estimated: input.estimated, outcome: input.outcome, error: null,
    }));
    if (!r) return undefined;
    // What the statement took: the cost, at most the deposit, at most what the balance still held.
    const charged = r.written.chargedNano;
    return { balanceAfterNano: r.available, depositNano: r.hold.depositNano, chargedNano: charged, overageNano: cost - charged };
  }

  /** Gives the deposit back (the provider failed before anything was generated); the balance after, or undefined. */
  async release(id: string, outcome: string, error: string | null): Promise<number | undefined> {
    const r = await this.end(id, () => ({
      status: 'released', costNano: 0, inputCostNano: 0, chargedNano: 0, promptTokens: null, completionTokens: null, estimated: false, outcome,
      error: error ? error.slice(0, 1000) : null,
    }));
    return r?.available;
  }

  private async end(
    id: string, how: (hold: ReserveInput) => Omit<Ended, 'id' | 'hold' | 'reservedAt' | 'period'>,
  ): Promise<{ hold: ReserveInput; available: number; written: Written } | undefined> {
    const open = this.open.get(id);
    if (!open) return undefined;
    this.open.delete(id);
    const s = this.state(open.hold.account);
    const ended: Ended = { id, hold: open.hold, reservedAt: open.reservedAt, period: this.usage.period(), ...how(open.hold) };
    // Calls made inside a run settle inline, so the run's cost is complete when its answer is sent.
    if (this.deferred && !open.hold.executionId) return this.endLater(ended, s);
    let written: Written;
    try {
      written = await this.ends.submit(ended);
    } finally {
      // After the write's new balance is in place (never before: the deposit must not be free while its charge is unwritten).
      s.held -= open.hold.depositNano;
    }
    const available = Math.max(0, (s.balance ?? (await this.balanceOf(open.hold.account, s))) - s.held);
    return { hold: open.hold, available, written };
  }

  /**
   * Answers from memory and writes within the settle window: the deposit's unused part is free at once, the
   * charge stays held until its write commits (then the balance read back has it), so the balance a deposit
   * is checked against never counts a charge twice nor misses one.
   */
  private async endLater(ended: Ended, s: AccountState): Promise<{ hold: ReserveInput; available: number; written: Written }> {
    const { hold, chargedNano } = ended;
    s.held -= hold.depositNano - chargedNano;
    this.ends.submit(ended).then(
      () => { s.held -= chargedNano; },
      (err: unknown) => {
        s.held -= chargedNano;
        // The balance row may or may not have the charge: read it again.
        this.forget(hold.account);
        this.opts.onLostSettlement?.(err, ended.id);
      },
    );
    const available = Math.max(0, (s.balance ?? (await this.balanceOf(hold.account, s))) - s.held);
    return { hold, available, written: { balanceAfterNano: available, accountBalanceNano: available, chargedNano } };
  }

  private state(account: string): AccountState {
    let s = this.accounts.get(account);
    if (!s) {
      if (this.accounts.size >= 10_000) {
        for (const [k, v] of this.accounts) if (v.held === 0 && !v.loading && v.pauses === 0) this.accounts.delete(k);
      }
      s = { held: 0, epoch: 0, pauses: 0 };
      this.accounts.set(account, s);
    }
    return s;
  }

  private async balanceOf(account: string, s: AccountState): Promise<number> {
    while (s.balance === undefined) {
      s.loading ??= this.load(account, s).finally(() => {
        s.loading = undefined;
      });
      await s.loading;
    }
    return s.balance;
  }

  private async load(account: string, s: AccountState): Promise<void> {
    const epoch = s.epoch;
    let balance = await this.opts.readBalance(account);
    if (balance === undefined) {
      await this.opts.ensureAccount(account);
      balance = (await this.opts.readBalance(account)) ?? 0;
    }
    // A write or a grant landed meanwhile: its figure (or a new read) wins over this one.
    if (s.epoch === epoch) s.balance = balance;
  }

  private async write(items: readonly Ended[]): Promise<Written[]> {
    const epochs = new Map(items.map((i) => [i.hold.account, this.state(i.hold.account).epoch]));
    const payload = items.map((i, ord) => ({
      ord, id: i.id, account: i.hold.account, deposit: i.hold.depositNano, want: i.chargedNano, cost: i.costNano, input_cost: i.inputCostNano,
      prompt: i.promptTokens, completion: i.completionTokens, estimated: i.estimated, status: i.status, outcome: i.outcome,
      error: i.error, period: i.period, model: i.hold.model, provider: i.hold.provider, stream: i.hold.stream, source: i.hold.source,
      http_request_id: i.hold.httpRequestId ?? null, workspace_id: i.hold.workspaceId ?? null, api_key_id: i.hold.apiKeyId ?? null,
      execution_id: i.hold.executionId ?? null, reserved_at: i.reservedAt.toISOString(),
    }));
    const rows = await this.db.query<EndRow>(endSql, [JSON.stringify(payload)]);
    const out: Written[] = new Array<Written>(items.length);
    for (const r of rows) {
      const item = items[Number(r.ord)];
      const s = this.state(item.hold.account);
      // The statement's figure is the database's balance unless a grant was made meanwhile (then read it again).
      s.balance = s.epoch === epochs.get(item.hold.account) ? Number(r.account_after) : undefined;
      out[Number(r.ord)] = { balanceAfterNano: Number(r.after_k), accountBalanceNano: Number(r.account_after), chargedNano: Number(r.charged) };
    }
    for (const account of epochs.keys()) this.state(account).epoch++;
    if (out.some((w) => w === undefined)) throw new Error('the credit balance of a finished AI request is missing');
    return out;
  }
}
