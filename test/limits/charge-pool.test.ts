// Base charges reserved ahead (issue 30): runs whose execution id the service chooses are admitted with a
// charge reserved for several runs by one statement. The cap holds exactly as with one statement per run,
// each run's charge consumes its own reservation, and what no run took is given back when the pool is idle,
// at shutdown, or (a process that died) when it lapses.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/database.js';
import { CapReached, ChargePools, type PoolKey, type ReservedCharge } from '../../src/limits/charge-pool.js';
import { billingPeriod, recordCost, runUsageKey } from '../../src/limits/usage.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
const db = () => t.server.ctx.db;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

const CHARGE = 0.005;
const key = (account: string, capCharges = 1_000_000, ttlMs = 600_000): PoolKey =>
  ({ account, period: billingPeriod(new Date()), amountUsd: CHARGE, capUsd: capCharges * CHARGE, ttlMs });

/** The database as one process sees it, counting the reservation statements sent. */
function counted(): { q: Queryable; reserves: () => number } {
  let reserves = 0;
  const q: Queryable = {
    query: (sql, params) => {
      if (sql.includes('INSERT INTO usage_reservations')) reserves++;
      return db().query(sql, params);
    },
  } as Queryable;
  return { q, reserves: () => reserves };
}

async function held(account: string): Promise<{ count: number; reservedUsd: number }> {
  const rows = await db().query<{ n: number; reserved: string | null }>(
    `SELECT (SELECT count(*)::int FROM usage_reservations WHERE account = $1) AS n,
            (SELECT sum(reserved_usd)::text FROM usage_totals WHERE account = $1) AS reserved`, [account]);
  return { count: rows[0].n, reservedUsd: Number(rows[0].reserved ?? 0) };
}

const charge = (account: string, c: ReservedCharge) =>
  recordCost(db(), { account, amountUsd: CHARGE, source: 'run', idempotencyKey: runUsageKey(c.executionId), at: new Date(), executionId: c.executionId });

async function until(done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; !(await done()); i++) {
    if (i > 400) throw new Error('timed out');
    await new Promise((res) => setTimeout(res, 25));
  }
}

describe('charges reserved ahead', () => {
  it('serve a burst with fewer statements than runs; each charge consumes its own reservation; shutdown gives back the rest', async () => {
    const account = `test:${randomUUID()}`;
    const { q, reserves } = counted();
    const pools = new ChargePools({ db: q, now: () => Date.now() });
    try {
      // Two bursts, the second while the pool is warm (it asks for more charges at a time once it runs dry fast).
      const first = await Promise.all(Array.from({ length: 40 }, () => pools.take(key(account))));
      const second = await Promise.all(Array.from({ length: 40 }, () => pools.take(key(account))));
      const all = [...first, ...second];
      expect(new Set(all.map((c) => c.token)).size).toBe(80);
      expect(new Set(all.map((c) => c.executionId)).size).toBe(80);
      // A few statements, not one per run: the first asks for the run waiting, the next for every run waiting then.
      expect(reserves()).toBeLessThanOrEqual(8);
      const before = await held(account);
      expect(before.count).toBeGreaterThanOrEqual(80);
      expect(before.reservedUsd).toBeCloseTo(before.count * CHARGE, 9);

      for (const c of all) await charge(account, c);
      // The 80 charges consumed their reservations; what is left is what no run took yet.
      const unused = before.count - 80;
      expect(await held(account)).toEqual({ count: unused, reservedUsd: Number((unused * CHARGE).toFixed(9)) });
    } finally {
      await pools.close();
    }
    expect(await held(account)).toEqual({ count: 0, reservedUsd: 0 });
  });

  it('never pass the cap: 60 runs asking at once under a cap of 12 charges, exactly 12 admitted', async () => {
    const account = `test:${randomUUID()}`;
    const pools = new ChargePools({ db: db(), now: () => Date.now() });
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 60 }, () => pools.take(key(account, 12))));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(12);
      const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(refused).toHaveLength(48);
      for (const r of refused) expect(r.reason).toBeInstanceOf(CapReached);
      expect(await held(account)).toEqual({ count: 12, reservedUsd: 0.06 });
    } finally {
      await pools.close();
    }
  });

  it('never pass the cap across processes: two pools asking at once under a cap of 12 charges admit exactly 12 between them', async () => {
    const account = `test:${randomUUID()}`;
    const a = new ChargePools({ db: db(), now: () => Date.now() });
    const b = new ChargePools({ db: db(), now: () => Date.now() });
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).take(key(account, 12))));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(12);
      expect(await held(account)).toEqual({ count: 12, reservedUsd: 0.06 });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a charge given back by a refused run goes to the next run, with no statement', async () => {
    const account = `test:${randomUUID()}`;
    const { q, reserves } = counted();
    const pools = new ChargePools({ db: q, now: () => Date.now() });
    try {
      const k = key(account);
      const c = await pools.take(k);
      const sent = reserves();
      pools.giveBack(k, c);
      expect(await pools.take(k)).toEqual(c);
      expect(reserves()).toBe(sent);
    } finally {
      await pools.close();
    }
  });

  it('what an idle pool holds unused is given back without a shutdown', async () => {
    const account = `test:${randomUUID()}`;
    const pools = new ChargePools({ db: db(), now: () => Date.now(), idleMs: 100 });
    try {
      // Runs arriving one after another, fast: the pool asks for more than one charge at a time.
      const taken: ReservedCharge[] = [];
      for (let i = 0; i < 12; i++) taken.push(await pools.take(key(account)));
      for (const c of taken) await charge(account, c);
      await until(async () => (await held(account)).count === 0);
      expect(await held(account)).toEqual({ count: 0, reservedUsd: 0 });
    } finally {
      await pools.close();
    }
  });

  it('what a process that died held lapses at its expiry, and the cap has room again', async () => {
    const account = `test:${randomUUID()}`;
    let now = Date.now();
    const dead = new ChargePools({ db: db(), now: () => now });
    await Promise.all(Array.from({ length: 5 }, () => dead.take(key(account, 5, 60_000))));
    // The process dies: its pool is never closed and its runs never charge.
    const alive = new ChargePools({ db: db(), now: () => now });
    try {
      await expect(alive.take(key(account, 5, 60_000))).rejects.toBeInstanceOf(CapReached);
      now += 60_001;
      const c = await alive.take(key(account, 5, 60_000));
      expect(c.executionId).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      await alive.close();
    }
  });
});

describe('runs admitted from charges reserved ahead', () => {
  it('sync and async bursts: every run charged once, the runs take the reserved ids, nothing stays reserved once idle', async () => {
    const wf = await deploy(t, 'pooled', { blocks: [start(), fn('f', 'return 1')], edges: [{ from: 'start', to: 'f' }] });
    const account = `workspace:${t.workspaceId}`;
    const sync = await Promise.all(Array.from({ length: 30 }, () => t.call('POST', `/api/workflows/${wf}/execute`, {})));
    expect(sync.every((r) => r.status === 200)).toBe(true);
    const queued = await Promise.all(Array.from({ length: 20 }, () => t.call('POST', `/api/workflows/${wf}/execute`, { async: true })));
    expect(queued.every((r) => r.status === 202)).toBe(true);
    for (const r of queued) expect((await waitForJob(t, r.body.jobId)).status).toBe('completed');

    const ids = [...sync.map((r) => r.body.executionId as string), ...queued.map((r) => r.body.executionId as string)];
    const charged = await db().query<{ n: number }>(
      "SELECT count(*)::int AS n FROM usage_events WHERE source = 'run' AND idempotency_key = ANY($1::text[])", [ids.map(runUsageKey)]);
    expect(charged[0].n).toBe(50);
    await until(async () => (await held(account)).count === 0);
    expect(await held(account)).toEqual({ count: 0, reservedUsd: 0 });
  });
});
