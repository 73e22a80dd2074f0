import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { publicExecutionId } from '../../src/runs/execution-ids.js';
import { request, type TestResponse } from '../support/harness.js';
import {
  countingUpstream, deployWorkflow, kill, openDb, prepareDatabase, sleep, spawnRole, startPostgres, startRedis, twoHitDefinition, waitFor,
  type Proc, type ThrowawayPostgres, type ThrowawayRedis,
} from './support.js';

/**
 * PostgreSQL lost under load, on a throwaway cluster of the test's own: Weft's connections
 * terminated again and again (pg_terminate_backend, found by application_name), and the server
 * stopped and started again. Requests in flight get a clean 503 with a JSON error and Retry-After
 * (never a 500), /readyz says not-ready while the server is away, the processes reconnect by
 * themselves, no accepted async run is lost or failed, and a caller retrying with the same
 * X-Execution-Id gets exactly one run.
 */
let pg: ThrowawayPostgres;
let redis: ThrowawayRedis;
let upstream: Awaited<ReturnType<typeof countingUpstream>>;

beforeAll(async () => {
  pg = await startPostgres();
  redis = await startRedis();
  upstream = await countingUpstream();
});
afterAll(async () => {
  upstream?.close();
  await redis?.stop();
  pg?.destroy();
});

interface Load {
  /** Execution ids the API accepted (202, or 409 on a retry of an accepted one). */
  accepted: Set<string>;
  /** Every answer other than a success, by status. */
  failures: TestResponse[];
  /** Requests that got no answer at all (the socket failed). */
  noAnswer: number;
  stop: () => Promise<void>;
}

/**
 * Async runs submitted steadily, each with its own X-Execution-Id and retried with it on a 503 or a
 * lost answer, until accepted; reads of the workflow in between.
 */
function startLoad(apiUrl: string, apiKey: string, workflowId: string, perSecond: number): Load {
  const h = { 'x-api-key': apiKey };
  const load: Load = { accepted: new Set(), failures: [], noAnswer: 0, stop: async () => undefined };
  let running = true;
  const submitters: Promise<void>[] = [];
  const submit = async (i: number) => {
    const executionId = randomUUID();
    for (let attempt = 0; attempt < 120; attempt++) {
      let r: TestResponse;
      try {
        r = await request(`${apiUrl}/api/workflows/${workflowId}/execute`, 'POST', { i, async: true }, { ...h, 'x-execution-id': executionId });
      } catch {
        load.noAnswer++;
        await sleep(500);
        continue;
      }
      if (r.status === 202 || r.status === 409) {
        load.accepted.add(executionId);
        return;
      }
      load.failures.push(r);
      await sleep(500);
    }
  };
  const loop = (async () => {
    for (let i = 0; running; i++) {
      submitters.push(submit(i));
      // A read between submissions: the API's first query may meet a connection cut under it.
      submitters.push(request(`${apiUrl}/api/v1/workflows/${workflowId}`, 'GET', undefined, h).then(
        (r) => {
          if (r.status !== 200) load.failures.push(r);
        },
        () => {
          load.noAnswer++;
        },
      ));
      await sleep(1000 / perSecond);
    }
  })();
  load.stop = async () => {
    running = false;
    await loop;
    await Promise.all(submitters);
  };
  return load;
}

/** Every failure is a clean 503: a JSON error and Retry-After. */
function expectCleanFailures(failures: TestResponse[]): void {
  for (const f of failures) {
    expect({ status: f.status, body: f.body }).toMatchObject({ status: 503, body: { error: expect.any(String) } });
    expect(f.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(f.headers.get('content-type')).toMatch(/application\/json/);
  }
}

async function expectAllCompleted(db: Database, accepted: Set<string>, workflowId: string): Promise<void> {
  const rows = await waitFor('every accepted run to finish', async () => {
    const r = await db.query<{ id: string; status: string; error: string | null }>(
      'SELECT id, status, error FROM executions WHERE workflow_id = $1', [workflowId]);
    return r.every((x) => x.status !== 'queued' && x.status !== 'processing') ? r : undefined;
  }, 120_000, 500);
  // Exactly one run per accepted id (retries with the same X-Execution-Id never made a second one),
  // and none missing: compared as sets, so a failure names the ids.
  const found = new Set(rows.map((r) => publicExecutionId(r.id)));
  expect([...accepted].filter((id) => !found.has(id))).toEqual([]);
  expect(rows).toHaveLength(accepted.size);
  expect(rows.filter((r) => r.status !== 'completed')).toEqual([]);
}

function alive(procs: Proc[]): void {
  for (const p of procs) expect({ role: p.role, exit: p.child.exitCode, signal: p.child.signalCode }).toEqual({ role: p.role, exit: null, signal: null });
}

describe('PostgreSQL connections lost under load', () => {
  it('connections terminated repeatedly (BullMQ dispatch): clean 503s only, processes live on, every accepted run completes', async () => {
    const { url, apiKey, workspaceId } = await prepareDatabase(pg, 'weft_terminate');
    const env = {
      DATABASE_URL: url, REDIS_URL: redis.url, WEFT_DEFAULT_PLAN: 'enterprise', WEFT_LIMITS: 'off', WEFT_ALLOW_PRIVATE_NETWORK: 'true',
      WEFT_JOB_LEASE_MS: '10000', WEFT_MAX_JOB_INTERRUPTIONS: '50',
    };
    const api = await spawnRole(env, 'api');
    const workers = await Promise.all([spawnRole(env, 'worker'), spawnRole(env, 'worker')]);
    const db = await openDb(url);
    try {
      const id = await deployWorkflow(api.url, apiKey, workspaceId, 'terminated', twoHitDefinition(upstream.url, 50));
      const load = startLoad(api.url, apiKey, id, 10);
      let terminated = 0;
      for (let k = 0; k < 10; k++) {
        await sleep(1_200);
        terminated += await pg.terminate('weft');
      }
      await load.stop();
      console.log(`terminate: ${terminated} connections killed; accepted ${load.accepted.size}; 503s ${load.failures.length}; no answer ${load.noAnswer}`);
      expect(terminated).toBeGreaterThanOrEqual(10);
      expectCleanFailures(load.failures);
      expect(load.noAnswer).toBe(0);
      alive([api, ...workers]);
      await expectAllCompleted(db, load.accepted, id);
      // Right after a cut, the API's first query meets a dead pooled connection: answered, not a 500.
      await request(`${api.url}/api/v1/workflows/${id}`, 'GET', undefined, { 'x-api-key': apiKey }); // warm the pool
      expect(await pg.terminate('weft')).toBeGreaterThan(0);
      const after = await request(`${api.url}/api/v1/workflows/${id}`, 'GET', undefined, { 'x-api-key': apiKey });
      expect(after.status).toBe(200);
      alive([api, ...workers]);
    } finally {
      await db.close();
      await Promise.all([api, ...workers].map((p) => kill(p)));
    }
  }, 300_000);

  it('PostgreSQL restarted (PostgreSQL-only dispatch): 503 with Retry-After and /readyz not ready while away, then everything resumes', async () => {
    const { url, apiKey, workspaceId } = await prepareDatabase(pg, 'weft_restart');
    const env = {
      DATABASE_URL: url, REDIS_URL: '', WEFT_DEFAULT_PLAN: 'enterprise', WEFT_LIMITS: 'off', WEFT_ALLOW_PRIVATE_NETWORK: 'true',
      WEFT_JOB_LEASE_MS: '15000', WEFT_MAX_JOB_INTERRUPTIONS: '50',
    };
    const api = await spawnRole(env, 'api');
    const workers = await Promise.all([spawnRole(env, 'worker'), spawnRole(env, 'worker')]);
    const db = await openDb(url);
    try {
      const id = await deployWorkflow(api.url, apiKey, workspaceId, 'restarted', twoHitDefinition(upstream.url, 300));
      expect((await request(`${api.url}/readyz`, 'GET')).status).toBe(200);
      const load = startLoad(api.url, apiKey, id, 8);
      await sleep(3_000);
      pg.stop('fast');
      // Away: not ready, and requests are refused cleanly.
      const ready = await request(`${api.url}/readyz`, 'GET');
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ error: expect.any(String) });
      const refused = await request(`${api.url}/api/v1/workflows/${id}`, 'GET', undefined, { 'x-api-key': apiKey });
      expect(refused.status).toBe(503);
      expectCleanFailures([refused]);
      await sleep(3_000);
      pg.start();
      await waitFor('/readyz to be ready again', async () => ((await request(`${api.url}/readyz`, 'GET')).status === 200 ? true : undefined), 60_000);
      await sleep(3_000);
      // Once more, an immediate stop (like a crash; recovery at start).
      pg.stop('immediate');
      await sleep(2_000);
      pg.start();
      await waitFor('/readyz to be ready again', async () => ((await request(`${api.url}/readyz`, 'GET')).status === 200 ? true : undefined), 60_000);
      await sleep(3_000);
      await load.stop();
      console.log(`restart: accepted ${load.accepted.size}; 503s ${load.failures.length}; no answer ${load.noAnswer}`);
      expect(load.failures.length).toBeGreaterThan(0);
      expectCleanFailures(load.failures);
      expect(load.noAnswer).toBe(0);
      alive([api, ...workers]);
      await expectAllCompleted(db, load.accepted, id);
      // New work after the restarts runs too.
      const r = await request(`${api.url}/api/workflows/${id}/execute`, 'POST', { i: 100_000, async: true }, { 'x-api-key': apiKey });
      expect(r.status).toBe(202);
      await waitFor('a run after the restarts', async () => {
        const [row] = await db.query<{ status: string }>('SELECT status FROM executions WHERE id = $1', [r.body.executionId]);
        return row?.status === 'completed' ? true : undefined;
      }, 60_000);
      alive([api, ...workers]);
    } finally {
      await db.close();
      await Promise.all([api, ...workers].map((p) => kill(p)));
    }
  }, 300_000);

  it('connections cut at every moment (PostgreSQL-only dispatch): idle pool, the LISTEN client, inside transactions, start-up and its recovery', async () => {
    const { url, apiKey, workspaceId } = await prepareDatabase(pg, 'weft_moments');
    const env = {
      DATABASE_URL: url, REDIS_URL: '', WEFT_DEFAULT_PLAN: 'enterprise', WEFT_LIMITS: 'off', WEFT_ALLOW_PRIVATE_NETWORK: 'true',
      WEFT_JOB_LEASE_MS: '6000', WEFT_MAX_JOB_INTERRUPTIONS: '50',
    };
    const h = { 'x-api-key': apiKey };
    const api = await spawnRole(env, 'api');
    let worker = await spawnRole(env, 'worker');
    const procs = () => [api, worker];
    const db = await openDb(url);
    const backends = async (name: string) => (await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()', [name]))[0]?.n ?? 0;
    const accepted = new Set<string>();
    /** One async run, submitted until accepted (503s while connections are cut are retried with the same id). */
    const submit = async (i: number) => {
      const executionId = randomUUID();
      for (let attempt = 0; attempt < 120; attempt++) {
        const r = await request(`${api.url}/api/workflows/${id}/execute`, 'POST', { i, async: true }, { ...h, 'x-execution-id': executionId }).catch(() => undefined);
        if (r && (r.status === 202 || r.status === 409)) {
          accepted.add(executionId);
          return;
        }
        if (r) expectCleanFailures([r]);
        await sleep(250);
      }
    };
    let id = '';
    try {
      id = await deployWorkflow(api.url, apiKey, workspaceId, 'moments', twoHitDefinition(upstream.url, 30));
      await Promise.all(Array.from({ length: 5 }, (_, i) => submit(i)));
      await expectAllCompleted(db, accepted, id);

      // 1. Idle: every pooled connection and the LISTEN connection cut while nothing runs.
      await waitFor('the worker LISTEN connection', async () => ((await backends('weft-queue')) > 0 ? true : undefined), 30_000, 100);
      expect(await pg.terminate('weft')).toBeGreaterThan(0);
      await Promise.all(Array.from({ length: 5 }, (_, i) => submit(100 + i)));
      await expectAllCompleted(db, accepted, id);
      alive(procs());

      // 2. The LISTEN connection alone: the queue listens again by itself, and wake-ups work again.
      expect(await pg.terminate('weft-queue')).toBe(1);
      await waitFor('the LISTEN connection back', async () => ((await backends('weft-queue')) > 0 ? true : undefined), 30_000, 100);
      await Promise.all(Array.from({ length: 5 }, (_, i) => submit(200 + i)));
      await expectAllCompleted(db, accepted, id);
      alive(procs());

      // 3. Under load, cut every 100 ms for 6 s: connections die inside transactions (checked out),
      // between statements, at BEGIN and while idle, in the API and the worker alike.
      const burst = Array.from({ length: 40 }, (_, i) => sleep(i * 150).then(() => submit(300 + i)));
      let cut = 0;
      for (const until = Date.now() + 6_000; Date.now() < until;) {
        cut += await pg.terminate('weft');
        await sleep(100);
      }
      await Promise.all(burst);
      console.log(`every moment: ${cut} connections cut under load; accepted ${accepted.size}`);
      expect(cut).toBeGreaterThan(20);
      alive(procs());
      await expectAllCompleted(db, accepted, id);

      // 4. Start-up: the worker killed with runs in flight, runs accepted while none is running, and a
      // new worker whose first migration transaction has its connection cut (it waits on the
      // migrations' lock, held here) and whose start-up recovery runs while connections keep being cut.
      const inFlight = Array.from({ length: 10 }, (_, i) => submit(400 + i));
      await sleep(300);
      await kill(worker);
      await Promise.all(inFlight);
      await Promise.all(Array.from({ length: 10 }, (_, i) => submit(500 + i)));
      let releaseLock!: () => void;
      const gate = new Promise<void>((r) => (releaseLock = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holding = db.tx(async (q) => {
        await q.query('SELECT pg_advisory_xact_lock(872341)');
        locked();
        await gate;
      });
      await isLocked;
      const starting = spawnRole(env, 'worker');
      let startFailure: unknown;
      starting.catch((err: unknown) => {
        startFailure = err;
      });
      try {
        for (let round = 0; round < 2; round++) {
          const pids = await waitFor('the new worker waiting on the migrations lock', async () => {
            if (startFailure) return 'exited' as const;
            const rows = await db.query<{ pid: number }>(
              "SELECT pid FROM pg_stat_activity WHERE application_name = 'weft' AND wait_event_type = 'Lock' AND datname = current_database()");
            return rows.length > 0 ? rows : undefined;
          }, 30_000, 50);
          // Before the fix, the first cut ended the worker: "weft: terminating connection due to administrator command".
          if (pids === 'exited') throw startFailure;
          for (const { pid } of pids) await db.query('SELECT pg_terminate_backend($1)', [pid]);
        }
      } finally {
        releaseLock();
        await holding;
      }
      // Its start-up recovery and first jobs meet cut connections too.
      const cutting = (async () => {
        for (let k = 0; k < 10; k++) {
          await sleep(300);
          await pg.terminate('weft');
        }
      })();
      worker = await starting;
      await cutting;
      alive(procs());
      await expectAllCompleted(db, accepted, id);
      alive(procs());
    } finally {
      await db.close();
      await Promise.all(procs().map((p) => kill(p)));
    }
  }, 300_000);
});
