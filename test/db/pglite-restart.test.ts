import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { statementCancelled, type Database } from '../../src/db/database.js';
import type { RestartEvent } from '../../src/db/pglite-thread.js';
import { reserveCharges } from '../../src/limits/usage-totals.js';
import { dbMode, freshDatabase } from '../support/harness.js';

/**
 * The embedded database cannot interrupt a statement, so a bounded transaction past its time is ended by
 * stopping the database thread and opening the data directory again on a new one (src/db/pglite-thread.ts;
 * docs/architecture.md, Tables: bounded statements). What that must keep: every commit made before, those
 * that did not wait for the disk included; what it must run: the calls that waited behind it, none of which ran.
 */
describe.skipIf(dbMode() !== 'pglite')('the embedded database taken back from a transaction past its time', () => {
  let db: Database | undefined;
  afterEach(async () => {
    await db?.close();
    db = undefined;
  });

  const open = async (onRestart?: (e: RestartEvent) => void) => {
    const where = await freshDatabase();
    db = await connectDatabase({ dataDir: where.dataDir as string, onRestart });
    await db.exec('CREATE TABLE restart_marks (id text PRIMARY KEY)');
    return db;
  };
  const sleepPast = (d: Database, ms: number) => d.boundedTx(ms, (q) => q.query('SELECT pg_sleep(60)')).then(() => undefined, (err: unknown) => err);

  it('keeps every commit made before it, also one that did not wait for the disk', async () => {
    const events: RestartEvent[] = [];
    const d = await open((e) => events.push(e));
    await d.query("INSERT INTO restart_marks VALUES ('synced')");
    // A reservation commits without waiting for the disk (src/db/async-commit.ts): its log stays in the database
    // thread's memory until a later commit flushes it, and a bounded transaction flushes it before it starts.
    const token = randomUUID();
    const reserved = await reserveCharges(d, {
      account: 'workspace:restart', period: '2026-12-01', amountUsd: 0.01, capUsd: 100, tokens: [token], usageKeys: [null],
      now: new Date(), expiresAt: new Date(Date.now() + 3_600_000),
    });
    expect(reserved.granted).toBe(1);
    expect(statementCancelled(await sleepPast(d, 200))).toBe(true);
    expect(events).toMatchObject([{ timeoutMs: 200, failedCalls: 1 }]);
    expect(events[0].reopenMs).toBeGreaterThan(0);
    expect(await d.query('SELECT id FROM restart_marks')).toEqual([{ id: 'synced' }]);
    expect(await d.query('SELECT count(*)::int AS n FROM usage_reservations WHERE token = $1', [token])).toEqual([{ n: 1 }]);
  }, 60_000);

  it('runs the calls that waited behind it on the new thread, in the order they came, and those made after', async () => {
    const events: RestartEvent[] = [];
    const d = await open((e) => events.push(e));
    const stopped = sleepPast(d, 300);
    // Sent while the transaction holds the database: they wait behind it, never run on the old thread, and are
    // sent again to the new one.
    await new Promise((r) => setTimeout(r, 50));
    const waiting = [
      d.query("INSERT INTO restart_marks VALUES ('1 behind')"),
      d.tx(async (q) => {
        await q.query("INSERT INTO restart_marks VALUES ('2 behind, in a transaction')");
        return q.query<{ n: number }>('SELECT count(*)::int AS n FROM restart_marks');
      }),
    ];
    expect(statementCancelled(await stopped)).toBe(true);
    const [, inTx] = await Promise.all(waiting);
    expect(inTx).toEqual([{ n: 2 }]);
    expect(events).toMatchObject([{ failedCalls: 1 }]);
    // Made after: they run too.
    await d.query("INSERT INTO restart_marks VALUES ('3 after')");
    expect(await d.tx((q) => q.query('SELECT id FROM restart_marks ORDER BY id'))).toEqual([
      { id: '1 behind' }, { id: '2 behind, in a transaction' }, { id: '3 after' },
    ]);
    // And the next bounded transaction is bounded too.
    expect(statementCancelled(await sleepPast(d, 200))).toBe(true);
    expect(await d.query('SELECT count(*)::int AS n FROM restart_marks')).toEqual([{ n: 3 }]);
  }, 60_000);

  it("answers its activity counters while a statement holds the thread, and keeps them through the restart", async () => {
    const d = await open();
    await d.query("INSERT INTO restart_marks VALUES ('counted')");
    const before = await d.activity!();
    expect(before.statements).toBeGreaterThan(0);
    const stopped = sleepPast(d, 600);
    await new Promise((r) => setTimeout(r, 300));
    // Read while the sleep holds the database thread: the busy time under way is in it, and no call waited.
    const during = await d.activity!();
    expect(during.busySeconds).toBeGreaterThanOrEqual(before.busySeconds + 0.2);
    expect(statementCancelled(await stopped)).toBe(true);
    await d.query("INSERT INTO restart_marks VALUES ('after')");
    const after = await d.activity!();
    // Counters of the stopped thread are not lost: the new thread adds to them.
    expect(after.statements).toBeGreaterThan(during.statements);
    expect(after.busySeconds).toBeGreaterThanOrEqual(during.busySeconds);
    expect(after.fileSyncs).toBeGreaterThanOrEqual(during.fileSyncs);
  }, 60_000);

  it('never cuts short a database kept in memory, which would be lost with its thread', async () => {
    db = await connectDatabase({ dataDir: '', inMemory: true });
    const slept = await db.boundedTx(100, (q) => q.query<{ ok: boolean }>('SELECT true AS ok FROM pg_sleep(0.5)'));
    expect(slept).toEqual([{ ok: true }]);
  }, 60_000);
});
