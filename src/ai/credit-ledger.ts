import type { Database, Queryable } from '../db/database.js';
import { UsageRecorder } from '../limits/usage.js';
import { GroupCommit } from '../db/group-commit.js';
import { changeWithDepositsHeld, forgetBalance, HeldCreditLedger } from './held-ledger.js';
import { formatUsd } from './money.js';
import {
  releaseSql, reserveBatch, settleBatch,
  type ReserveInput, type ReserveResult, type SettleInput, type SettleItem, type SettleResult,
} from './ledger-sql.js';

// Credit balances per billed account and the ledger of every movement. Amounts are integers in
// nano-USD (1e-9 USD). Each operation is one short statement or transaction: nothing here is held
// open across a provider call.
//
//   reserve:  balance -= deposit, reserved += deposit        (only if balance >= deposit)
//   settle:   balance += deposit - min(cost, deposit), reserved -= deposit, and a usage event;
//             a cost beyond the deposit is an 'overage' entry of amount 0 (not charged)
//   release:  balance += deposit, reserved -= deposit        (the provider failed; nothing is charged)
//   grant:    balance += amount                               (CLI, or starting credits; never below 0)
//
// A negative grant takes only credits that are free: never the deposits of requests in flight (on the
// embedded database they are held in memory, not yet taken out of the balance row; see held-ledger.ts).
//
// A balance never goes below zero (the database checks it too).

export { NANO_PER_USD, formatUsd, nanoToUsd, roundUsd, usdToNano } from './money.js';
export type { ReserveInput, ReserveResult, SettleInput, SettleResult } from './ledger-sql.js';

export interface BalanceRow { account: string; balance_nano: number; reserved_nano: number; updated_at: Date }

export type LedgerKind = 'grant' | 'reserve' | 'settle' | 'release' | 'overage';

export interface LedgerRow {
  id: number;
  account: string;
  kind: LedgerKind;
  /** Signed change to the balance (0 for overage entries). */
  amount_nano: number;
  balance_after_nano: number;
  /** settle: what was charged; overage: the part of the cost beyond the deposit, not charged. */
  cost_nano: number | null;
  request_id: string | null;
  model: string | null;
  note: string | null;
  created_at: Date;
}

const NOW = `date_trunc('milliseconds', clock_timestamp())`;

/** A grant that would take a balance below zero, or take deposits of requests in flight. */
export class NegativeBalanceError extends Error {
  /**
   * @param balanceNano what is free to take (deposits of requests in flight already taken out)
   * @param reservedNano the deposits of requests in flight
   */
  constructor(readonly account: string, readonly balanceNano: number, readonly amountNano: number, readonly reservedNano = 0) {
    super(
      `Taking $${formatUsd(-amountNano)} from ${account} would take its balance ($${formatUsd(balanceNano)}) below zero` +
        (reservedNano > 0
          ? `: $${formatUsd(reservedNano)} more is reserved by AI requests in flight and cannot be taken. Nothing was changed; ` +
            `take at most $${formatUsd(balanceNano)}, or try again when the requests have finished.`
          : '. Nothing was changed.'),
    );
  }
}

/**
 * Creates the account's balance on first use, with its starting credits recorded as a grant.
 * Returns true when it was created now.
 */
export async function ensureAccount(db: Database, account: string, startingNano: number): Promise<boolean> {
  const starting = Math.max(0, Math.round(startingNano));
  const created = await db.tx(async (q) => {
    const rows = await q.query<{ balance_nano: number }>(
      `INSERT INTO ai_credit_balances (account, balance_nano) VALUES ($1, $2::bigint)
       ON CONFLICT (account) DO NOTHING RETURNING balance_nano`,
      [account, starting],
    );
    if (rows.length === 0) return false;
    if (starting !== 0) {
      await q.query(
        `INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, note) VALUES ($1, 'grant', $2::bigint, $2::bigint, 'starting credits')`,
        [account, starting],
      );
    }
    return true;
  });
  if (created) forgetBalance(db, account);
  return created;
}

/**
 * Adds (or with a negative amount, takes) credits. Returns the balance row after (on the embedded database it
 * still counts the deposits held in memory). Taking more than is free (the balance less the deposits of
 * requests in flight) throws NegativeBalanceError and changes nothing.
 */
export async function grant(db: Database, account: string, amountNano: number, note: string | null = null): Promise<number> {
  if (amountNano >= 0) {
    const after = await db.tx(async (q) => {
      const rows = await q.query<{ balance_nano: number }>(
        `INSERT INTO ai_credit_balances AS b (account, balance_nano) VALUES ($1, $2::bigint)
         ON CONFLICT (account) DO UPDATE SET balance_nano = b.balance_nano + $2::bigint, updated_at = ${NOW}
         RETURNING balance_nano::int8 AS balance_nano`,
        [account, amountNano],
      );
      return recordGrant(q, account, amountNano, Number(rows[0].balance_nano), note);
    });
    forgetBalance(db, account);
    return after;
  }
  return changeWithDepositsHeld(db, account, (heldNano) => db.tx(async (q) => {
    const rows = await q.query<{ balance_nano: number }>(
      `UPDATE ai_credit_balances SET balance_nano = balance_nano + $2::bigint, updated_at = ${NOW}
        WHERE account = $1 AND balance_nano - $3::bigint + $2::bigint >= 0
       RETURNING balance_nano::int8 AS balance_nano`,
      [account, amountNano, heldNano],
    );
    if (rows.length === 0) {
      const b = await getBalance(q, account);
      throw new NegativeBalanceError(account, Math.max(0, (b?.balanceNano ?? 0) - heldNano), amountNano, (b?.reservedNano ?? 0) + heldNano);
    }
    return recordGrant(q, account, amountNano, Number(rows[0].balance_nano), note);
  }));
}

async function recordGrant(q: Queryable, account: string, amountNano: number, after: number, note: string | null): Promise<number> {
  await q.query(
    `INSERT INTO ai_credit_ledger (account, kind, amount_nano, balance_after_nano, note) VALUES ($1, 'grant', $2::bigint, $3::bigint, $4)`,
    [account, amountNano, after, note],
  );
  return after;
}

export async function getBalance(q: Queryable, account: string): Promise<{ balanceNano: number; reservedNano: number; updatedAt: Date } | undefined> {
  const rows = await q.query<BalanceRow>(
    'SELECT account, balance_nano::int8 AS balance_nano, reserved_nano::int8 AS reserved_nano, updated_at FROM ai_credit_balances WHERE account = $1',
    [account],
  );
  const r = rows[0];
  return r ? { balanceNano: Number(r.balance_nano), reservedNano: Number(r.reserved_nano), updatedAt: r.updated_at } : undefined;
}

/** Ledger entries of an account, newest first, strictly before `beforeId` when given. */
export async function listLedger(q: Queryable, account: string, limit: number, beforeId?: number): Promise<LedgerRow[]> {
  const rows = await q.query<LedgerRow>(
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

export interface CreditLedgerOptions {
  /** Balance an account starts with the first time it reserves (recorded as a grant). */
  startingNano?: number;
  /** Billing periods of the usage events written at settlement (the limits service's, so one clock decides). */
  usage?: UsageRecorder;
  /**
   * Settlements are written within this delay after the answer, several in one transaction (0: each before
   * its answer). The deposit is taken before the request goes out either way: docs/architecture.md, Credit ledgers.
   */
  settleWindowMs?: number;
  /** A settlement written after its answer could not be written (its charge is lost; the deposit comes back). */
  onLostSettlement?: (err: unknown, requestId: string) => void;
}

/** The per-request movements of the ledger: reserve a deposit, then settle or release it. */
export interface RequestLedger {
  /** Takes the deposit if the balance covers it; concurrent reservations never take more than the balance holds. */
  reserve(input: ReserveInput): Promise<ReserveResult>;
  /** Charges the cost, at most the deposit. Undefined when the request was not (or no longer) reserved. */
  settle(id: string, input: SettleInput): Promise<SettleResult | undefined>;
  /** Gives the whole deposit back; the balance after, or undefined when nothing was reserved. */
  release(id: string, outcome: string, error: string | null): Promise<number | undefined>;
  /** Releases reservations left open in the database longer than `olderThanMs` (a process died mid-request). */
  releaseAbandoned(olderThanMs: number): Promise<number>;
  /** Deposits of `account` held outside the database (in this process's memory). */
  heldNano(account: string): number;
  /** Writes the settlements waiting for their window (shutdown). */
  flush(): Promise<void>;
}

/**
 * The ledger for the database's mode: deposits held in memory when this process alone writes the database
 * (embedded), in the database when several processes share it (PostgreSQL). See docs/architecture.md,
 * Credit ledgers.
 */
export function requestLedger(db: Database, opts: CreditLedgerOptions = {}): RequestLedger {
  const inDatabase = new CreditLedger(db, opts);
  if (db.mode !== 'pglite') return inDatabase;
  const held = new HeldCreditLedger(db, {
    ensureAccount: (account) => ensureAccount(db, account, opts.startingNano ?? 0),
    readBalance: async (account) => (await getBalance(db, account))?.balanceNano,
    usage: opts.usage,
    settleWindowMs: opts.settleWindowMs,
    onLostSettlement: opts.onLostSettlement,
  });
  return {
    reserve: (input) => held.reserve(input),
    settle: (id, input) => held.settle(id, input),
    release: (id, outcome, error) => held.release(id, outcome, error),
    // Reservations in the database exist only if an earlier version of the server left them there.
    releaseAbandoned: (olderThanMs) => inDatabase.releaseAbandoned(olderThanMs),
    heldNano: (account) => held.heldNano(account),
    flush: () => held.flush(),
  };
}

/**
 * The per-request movements of the ledger (reserve, settle, release) in the database, batched across the
 * requests in flight at the same time: the ledger of a database that several processes share.
 */
export class CreditLedger implements RequestLedger {
  private readonly reserves: GroupCommit<ReserveInput, ReserveResult | undefined>;
  private readonly settles: GroupCommit<SettleItem, SettleResult | undefined>;
  private readonly startingNano: number;
  private readonly usage: UsageRecorder;
  /** Deposits taken by this process and not yet settled: a settlement written later is answered from them. */
  private readonly reserved = new Map<string, { depositNano: number; balanceAfterNano: number }>();
  private readonly deferred: boolean;

  constructor(readonly db: Database, private readonly opts: CreditLedgerOptions = {}) {
    this.reserves = new GroupCommit({
      writeBatch: (items) => reserveBatch(db, items),
      writeOne: async (item) => (await reserveBatch(db, [item]))[0],
    });
    this.settles = new GroupCommit({
      writeBatch: (items) => settleBatch(db, items),
      writeOne: async (item) => (await settleBatch(db, [item]))[0],
      windowMs: opts.settleWindowMs,
    });
    this.deferred = (opts.settleWindowMs ?? 0) > 0;
    this.startingNano = opts.startingNano ?? 0;
    this.usage = opts.usage ?? new UsageRecorder();
  }

  /**
   * Takes the deposit from the balance if it covers it. Concurrent reservations can never take more
   * than the balance holds. An account used for the first time is created with its starting credits.
   */
  async reserve(input: ReserveInput): Promise<ReserveResult> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await this.reserves.submit(input);
      // Calls made inside a run settle inline, so the run's cost is complete when its answer is sent.
      if (r?.ok && this.deferred && !input.executionId) this.reserved.set(input.id, { depositNano: input.depositNano, balanceAfterNano: r.balanceAfterNano });
      if (r) return r;
      await ensureAccount(this.db, input.account, this.startingNano);
    }
    return { ok: false, balanceNano: (await getBalance(this.db, input.account))?.balanceNano ?? 0 };
  }

  /**
   * Replaces the deposit with the cost, charging at most the deposit (the rest is an overage entry).
   * Undefined when the request was not (or no longer) reserved.
   */
  async settle(id: string, input: SettleInput): Promise<SettleResult | undefined> {
    const item = { id, input, period: this.usage.period() };
    const held = this.reserved.get(id);
    if (!held) return this.settles.submit(item);
    this.reserved.delete(id);
    // Written within the settle window: the deposit already left the balance, so the write only gives back
    // its unused part; until then the answer's balance is the one after the reservation plus that part.
    this.settles.submit(item).catch((err: unknown) => this.opts.onLostSettlement?.(err, id));
    const cost = Math.max(0, Math.round(input.costNano));
    const charged = Math.min(cost, held.depositNano);
    return {
      balanceAfterNano: held.balanceAfterNano + held.depositNano - charged, depositNano: held.depositNano, chargedNano: charged, overageNano: cost - charged,
    };
  }

  flush(): Promise<void> {
    return this.settles.flush();
  }

  /** Gives the whole deposit back (the request failed before anything was generated). */
  async release(id: string, outcome: string, error: string | null): Promise<number | undefined> {
    this.reserved.delete(id);
    const rows = await this.db.query<{ balance_nano: number }>(releaseSql, [id, outcome, error ? error.slice(0, 1000) : null]);
    return rows[0] ? Number(rows[0].balance_nano) : undefined;
  }

  heldNano(): number {
    return 0;
  }

  /** Releases reservations left open longer than `olderThanMs` (a process died mid-request). */
  async releaseAbandoned(olderThanMs: number): Promise<number> {
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM ai_requests WHERE status = 'reserved' AND created_at < now() - ($1::int * interval '1 millisecond') LIMIT 500`,
      [olderThanMs],
    );
    let n = 0;
    for (const r of rows) if ((await this.release(r.id, 'abandoned', 'The request did not finish; its deposit was returned')) !== undefined) n++;
    return n;
  }
}
