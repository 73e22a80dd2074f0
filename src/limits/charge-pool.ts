import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import { newTimeOrderedId } from '../ids.js';
import { runUsageKey } from './usage.js';
import { releaseCharges, reserveCharges, type ReservationOutcome } from './usage-totals.js';

// Base charges reserved ahead (docs/architecture.md, Admission). A run whose execution id the service
// chooses is admitted with a charge reserved before it arrived: one statement reserves charges for several
// runs, each under the usage key of an execution id drawn then (`run:<id>`), so each run's charge consumes
// exactly its own reservation, in any process, as a charge reserved alone does. The cap holds as before: a
// run is admitted only with a reservation in the database. What this changes is the number of statements:
// one per batch of runs instead of one per run, which bounded the default configuration's throughput.

/** A base charge reserved in the database for a run not admitted yet. */
export interface ReservedCharge {
  /** The reservation's token (what releases it; also the admission's concurrency slot). */
  token: string;
  /** The execution id the run must take: its charge (`run:<id>`) consumes this reservation. */
  executionId: string;
  /** Until when the charge may still be handed to a run (past it, what is left of its lifetime is too short). */
  usableUntil: number;
}

/** The pool's account, period, cap and reservation lifetime: charges are interchangeable only within one. */
export interface PoolKey {
  account: string;
  period: string;
  amountUsd: number;
  capUsd: number;
  /** A reservation's lifetime: the run's timeout and a margin (a process that died leaves it to lapse). */
  ttlMs: number;
}

/** The usage cap refused: the period's cost and what runs in progress have reserved. */
export class CapReached extends Error {
  constructor(readonly costUsd: number, readonly reservedUsd: number) {
    super('usage cap reached');
  }
}

export interface ChargePoolOptions {
  db: Queryable;
  now: () => number;
  /** Most charges one statement asks for. */
  maxBatch?: number;
  /** How long a reserved charge may wait for its run (its lifetime is the run's timeout plus a minute). */
  usableMs?: number;
  /** Charges a pool holds unused this long after its last admission are given back. */
  idleMs?: number;
}

/** A pool that needs another statement this soon after its last grant asks for twice as many charges. */
const GROW_WITHIN_MS = 250;

interface Waiter { resolve: (c: ReservedCharge) => void; reject: (err: unknown) => void }

/**
 * One pool per (account, period, cap, lifetime) in this process. A pool asks for as many charges as it saw
 * runs waiting, or more while it runs dry quickly (doubling up to `maxBatch`), so a steady load costs one
 * statement per batch; at low load it asks for one, as admission did before. Charges left unused are given
 * back when the pool has been idle for `idleMs` (and at shutdown): until then they count against the cap.
 */
class Pool {
  private readonly ready: ReservedCharge[] = [];
  private readonly waiters: Waiter[] = [];
  private reserving = false;
  /** How many charges the next statement asks for (at least the runs waiting). */
  private size = 1;
  private lastGrantAt = Number.NEGATIVE_INFINITY;
  lastUse = 0;
  /** Reservations no run will take (too old to hand out): given back by the next sweep. */
  private stale: ReservedCharge[] = [];

  constructor(private readonly key: PoolKey, private readonly o: Required<ChargePoolOptions>) {}

  take(): Promise<ReservedCharge> {
    this.lastUse = this.o.now();
    const now = this.lastUse;
    while (this.ready.length > 0) {
      const charge = this.ready.shift() as ReservedCharge;
      if (charge.usableUntil > now) return Promise.resolve(charge);
      this.stale.push(charge);
    }
    return new Promise<ReservedCharge>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      void this.reserve();
    });
  }

  /** A charge handed out whose run was refused by a later gate before it started: the next run takes it. */
  giveBack(charge: ReservedCharge): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(charge);
    else this.ready.unshift(charge);
  }

  /** Takes out what should be given back now: stale charges, and every unused one once the pool is idle. */
  drainUnused(now: number, all: boolean): ReservedCharge[] {
    const out = this.stale;
    this.stale = [];
    if (all || now - this.lastUse >= this.o.idleMs) {
      out.push(...this.ready.splice(0));
      this.size = Math.max(1, this.size >> 1);
    } else {
      while (this.ready.length > 0 && this.ready[0].usableUntil <= now) out.push(this.ready.shift() as ReservedCharge);
    }
    return out;
  }

  get idle(): boolean {
    return this.ready.length === 0 && this.waiters.length === 0 && !this.reserving && this.stale.length === 0;
  }

  private async reserve(): Promise<void> {
    if (this.reserving || this.waiters.length === 0) return;
    this.reserving = true;
    const now = this.o.now();
    // The last batch ran out soon after it came: the load outruns the batch size, so double it.
    if (now - this.lastGrantAt < GROW_WITHIN_MS) this.size = Math.min(this.o.maxBatch, this.size * 2);
    const asked = Math.min(this.o.maxBatch, Math.max(this.size, this.waiters.length));
    // Handed out in the order of their ids (one millisecond's ids sort at random): runs of one pool take ids in order.
    const charges: ReservedCharge[] = Array.from({ length: asked }, () => ({ token: randomUUID(), executionId: newTimeOrderedId(), usableUntil: now + this.o.usableMs }))
      .sort((a, b) => (a.executionId < b.executionId ? -1 : 1));
    let outcome: ReservationOutcome;
    try {
      outcome = await reserveCharges(this.o.db, {
        account: this.key.account, period: this.key.period, amountUsd: this.key.amountUsd, capUsd: this.key.capUsd,
        tokens: charges.map((c) => c.token), usageKeys: charges.map((c) => runUsageKey(c.executionId)),
        now: new Date(now), expiresAt: new Date(now + this.key.ttlMs),
      });
    } catch (err) {
      // The statement failed: every run waiting on it fails with it. Should it have committed all the same (the
      // connection lost after the commit), its charges are given back rather than left to lapse in an hour.
      for (const w of this.waiters.splice(0)) w.reject(err);
      this.reserving = false;
      void releaseCharges(this.o.db, charges.map((c) => c.token)).catch(() => undefined);
      return;
    }
    this.reserving = false;
    if (outcome.granted === 0) {
      // No room: every run waiting now is refused (each would have found the same cap).
      const refusal = new CapReached(outcome.costUsd, outcome.reservedUsd);
      for (const w of this.waiters.splice(0)) w.reject(refusal);
      return;
    }
    this.lastGrantAt = now;
    for (const charge of charges.slice(0, outcome.granted)) {
      const waiter = this.waiters.shift();
      if (waiter) waiter.resolve(charge);
      else this.ready.push(charge);
    }
    // Fewer granted than runs waited (near the cap, or more runs than one batch): ask again for the rest.
    if (this.waiters.length > 0) void this.reserve();
  }
}

const poolId = (k: PoolKey) => [k.account, k.period, k.amountUsd, k.capUsd, k.ttlMs].join('\u0000');

/** Every pool of this process, and the timer that gives back what they hold unused. */
export class ChargePools {
  private readonly pools = new Map<string, Pool>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private readonly o: Required<ChargePoolOptions>;

  constructor(opts: ChargePoolOptions) {
    this.o = { maxBatch: 64, usableMs: 30_000, idleMs: 1_000, ...opts };
  }

  /** A reserved charge for one run of `key`'s account; `CapReached` when none fits under the cap. */
  take(key: PoolKey): Promise<ReservedCharge> {
    const id = poolId(key);
    let pool = this.pools.get(id);
    if (!pool) {
      pool = new Pool(key, this.o);
      this.pools.set(id, pool);
    }
    this.timer ??= setInterval(() => void this.sweep(false), Math.max(100, this.o.idleMs / 2)).unref();
    return pool.take();
  }

  /** Returns a charge handed out by `take` whose run never started (refused by a later gate). */
  giveBack(key: PoolKey, charge: ReservedCharge): void {
    const pool = this.pools.get(poolId(key));
    if (pool) pool.giveBack(charge);
    else void releaseCharges(this.o.db, [charge.token]).catch(() => undefined);
  }

  /**
   * Gives back the charges no run will take: those of idle pools (and stale ones), or every unused charge
   * with `all` (shutdown). One statement for all of them.
   */
  async sweep(all: boolean): Promise<void> {
    if (this.sweeping) {
      await this.sweeping;
      if (!all) return;
    }
    const now = this.o.now();
    const tokens: string[] = [];
    for (const [id, pool] of this.pools) {
      tokens.push(...pool.drainUnused(now, all).map((c) => c.token));
      if (pool.idle && now - pool.lastUse >= 60_000) this.pools.delete(id);
    }
    if (tokens.length === 0) return;
    this.sweeping = releaseCharges(this.o.db, tokens).catch(() => undefined).finally(() => {
      this.sweeping = undefined;
    });
    await this.sweeping;
  }

  /** Stops the timer and gives back every unused charge. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.sweep(true);
  }
}
