import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { freshDatabase, request, startTestServer } from '../support/harness.js';
import { postgresUrlFor } from '../support/templates.js';

// PostgreSQL terminating the adapter's connections (a restart, a failover, an operator's
// pg_terminate_backend). PGlite has no connections to lose.
const base = process.env.TEST_DATABASE_URL;
const mode = process.env.WEFT_TEST_DB === 'postgres' ? 'postgres' : 'pglite';
const skip = !base ? 'TEST_DATABASE_URL is not set' : mode !== 'postgres' ? 'PostgreSQL only: runs in the postgres project' : undefined;

describe.skipIf(skip !== undefined)(`pg adapter survives dropped connections${skip ? ` (skipped: ${skip})` : ''}`, () => {
  const appName = `weft_fault_${randomBytes(4).toString('hex')}`;
  const dbName = `weft_db_${randomBytes(6).toString('hex')}`;
  let db: Database;
  let admin: Database;
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);

  /** Terminates every backend of the adapter under test (found by its application_name). */
  async function terminateOurBackends(): Promise<number> {
    const rows = await admin.query<{ ok: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND datname = $2',
      [appName, dbName],
    );
    return rows.filter((r) => r.ok).length;
  }

  beforeAll(async () => {
    process.on('uncaughtException', onUncaught);
    admin = await connectDatabase({ databaseUrl: base, dataDir: '', applicationName: 'weft_fault_admin' });
    await admin.exec(`CREATE DATABASE ${dbName}`);
    db = await connectDatabase({ databaseUrl: postgresUrlFor(base as string, dbName), dataDir: '', applicationName: appName });
    await db.exec('CREATE TABLE fault_items (id text PRIMARY KEY)');
  });
  afterAll(async () => {
    process.off('uncaughtException', onUncaught);
    await db?.close();
    await admin?.exec(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await admin?.close();
  });

  it('sets application_name on its connections', async () => {
    const [row] = await db.query<{ name: string }>("SELECT current_setting('application_name') AS name");
    expect(row?.name).toBe(appName);
  });

  it('idle pooled connections killed: the process lives on and the next query succeeds', async () => {
    // Open several pooled connections, then kill them all while idle.
    await Promise.all(Array.from({ length: 4 }, () => db.tx((q) => q.query('SELECT pg_sleep(0.05)'))));
    expect(await terminateOurBackends()).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(await db.query<{ one: number }>('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await db.query("INSERT INTO fault_items VALUES ('after-idle-kill')");
    await expect(db.ping()).resolves.toBeUndefined();
    expect(uncaught).toEqual([]);
  });

  it('killed right away (no pause to notice): a plain query is retried once on a fresh connection', async () => {
    await Promise.all(Array.from({ length: 3 }, () => db.query('SELECT pg_sleep(0.02)')));
    expect(await terminateOurBackends()).toBeGreaterThanOrEqual(1);
    // No wait: the pool may still hand out a connection whose backend is gone.
    expect(await db.query<{ n: number }>('SELECT 2 AS n')).toEqual([{ n: 2 }]);
    // A transaction that lost its connection at BEGIN is tried again too.
    await Promise.all(Array.from({ length: 3 }, () => db.query('SELECT pg_sleep(0.02)')));
    await terminateOurBackends();
    await db.tx((q) => q.query("INSERT INTO fault_items VALUES ('tx-after-kill')"));
    expect(await db.query("SELECT id FROM fault_items WHERE id = 'tx-after-kill'")).toEqual([{ id: 'tx-after-kill' }]);
    expect(uncaught).toEqual([]);
  });

  it('a transaction in flight fails cleanly and is rolled back; the next ones work', async () => {
    let inside!: () => void;
    const reached = new Promise<void>((r) => (inside = r));
    const inFlight = db.tx(async (q) => {
      await q.query("INSERT INTO fault_items VALUES ('in-flight')");
      inside();
      await q.query('SELECT pg_sleep(5)'); // killed during this statement
      await q.query("INSERT INTO fault_items VALUES ('in-flight-2')");
    });
    const outcome = inFlight.then(() => 'committed', (err: unknown) => err);
    await reached;
    await new Promise((r) => setTimeout(r, 100));
    expect(await terminateOurBackends()).toBeGreaterThanOrEqual(1);
    const err = await outcome;
    expect(err).not.toBe('committed');
    expect(err).toBeInstanceOf(Error);
    // Idle in a checked-out client is the other shape: the connection dies between statements.
    let between!: () => void;
    const paused = new Promise<void>((r) => (between = r));
    let resume!: () => void;
    const gate = new Promise<void>((r) => (resume = r));
    const idleTx = db.tx(async (q) => {
      await q.query("INSERT INTO fault_items VALUES ('idle-in-tx')");
      between();
      await gate; // no statement running when the backend is killed: an 'error' event on the client
      await q.query('SELECT 1');
    }).then(() => 'committed', (e: unknown) => e);
    await paused;
    expect(await terminateOurBackends()).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 200)); // let the client see its socket close
    resume();
    expect(await idleTx).toBeInstanceOf(Error);
    // Nothing of either transaction committed, the process is alive, and work goes on.
    expect(await db.query("SELECT id FROM fault_items WHERE id IN ('in-flight', 'in-flight-2', 'idle-in-tx')")).toEqual([]);
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => db.tx((q) => q.query('INSERT INTO fault_items VALUES ($1) RETURNING id', [`later-${i}`]))));
    expect(results.flat()).toHaveLength(5);
    expect(uncaught).toEqual([]);
  });
});

describe.skipIf(skip !== undefined)(`start-up survives its connections terminated${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('a connection cut inside a start-up migration transaction: the server retries and comes up instead of exiting', async () => {
    const where = await freshDatabase();
    const dbName = new URL(where.databaseUrl as string).pathname.slice(1);
    const admin = await connectDatabase({ databaseUrl: base, dataDir: '', applicationName: 'weft_fault_admin' });
    const holder = await connectDatabase({ databaseUrl: where.databaseUrl, dataDir: '', applicationName: 'weft_fault_holder' });
    const uncaughtDuringStart: unknown[] = [];
    const onUncaught = (err: unknown) => uncaughtDuringStart.push(err);
    process.on('uncaughtException', onUncaught);
    let releaseLock!: () => void;
    const gate = new Promise<void>((r) => (releaseLock = r));
    try {
      // Hold the migrations' advisory lock, so that the server's first migration transaction waits
      // inside it (BEGIN and the lock request sent, nothing committed) until its connection is cut.
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holding = holder.tx(async (q) => {
        await q.query('SELECT pg_advisory_xact_lock(872341)');
        locked();
        await gate;
      });
      await isLocked;
      let settled: { t: Awaited<ReturnType<typeof startTestServer>> } | { err: unknown } | undefined;
      const starting = startTestServer({ reuse: where }).then((t) => ({ t }), (err: unknown) => ({ err }));
      void starting.then((outcome) => (settled = outcome));
      let cut = 0;
      // A terminated backend stays listed (still waiting on the lock) until it has exited: a round must not
      // take the previous round's backend for the retry's.
      const terminated = new Set<number>();
      for (let round = 0; round < 3; round++) {
        // The server's backend waiting on the lock, each round a new one (the retry's fresh transaction).
        let waiting: { pid: number }[] = [];
        for (let i = 0; i < 500 && waiting.length === 0 && !settled; i++) {
          waiting = (await admin.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'weft' AND wait_event_type = 'Lock'", [dbName]))
            .filter(({ pid }) => !terminated.has(pid));
          if (waiting.length === 0) await new Promise((r) => setTimeout(r, 20));
        }
        // Without a retry, the first cut ends the start-up with the driver's error.
        if (settled && 'err' in settled) throw new Error(`start-up failed after ${cut} cut connection(s): ${String(settled.err)}`);
        expect(waiting.length).toBeGreaterThan(0);
        for (const { pid } of waiting) {
          terminated.add(pid);
          const [row] = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [pid]);
          if (row?.ok) cut++;
        }
      }
      expect(cut).toBeGreaterThanOrEqual(3);
      releaseLock();
      await holding;
      const started = await starting;
      expect('err' in started ? String(started.err) : 'started').toBe('started');
      const t = (started as { t: Awaited<ReturnType<typeof startTestServer>> }).t;
      try {
        expect((await request(`${t.url}/readyz`, 'GET')).status).toBe(200);
        expect((await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`)).status).toBe(200);
      } finally {
        await t.close();
      }
      expect(uncaughtDuringStart).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      releaseLock();
      await holder.close();
      await admin.exec(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
      await admin.close();
    }
  }, 120_000);
});
