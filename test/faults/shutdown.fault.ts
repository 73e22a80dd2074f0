import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../support/harness.js';
import {
  countingUpstream, deployWorkflow, kill, openDb, prepareDatabase, spawnRole, startPostgres, startRedis, twoHitDefinition, waitFor,
  type ThrowawayPostgres, type ThrowawayRedis,
} from './support.js';

/**
 * Graceful shutdown: SIGTERM on a worker finishes its runs or hands them back, so another worker
 * resumes them well within the lease (not after it lapses); SIGTERM on an API process answers the
 * requests in flight before it exits.
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

const exitOf = (p: { child: { once: (e: 'exit', f: (code: number | null) => void) => void; exitCode: number | null } }) =>
  p.child.exitCode !== null ? Promise.resolve(p.child.exitCode) : new Promise<number | null>((res) => p.child.once('exit', res));

describe('graceful shutdown', () => {
  it('SIGTERM on a worker: its runs are handed back and completed by the other well within the lease', async () => {
    const LEASE_MS = 120_000;
    const { url, apiKey, workspaceId } = await prepareDatabase(pg, 'weft_term_worker');
    const env = {
      DATABASE_URL: url, REDIS_URL: redis.url, WEFT_DEFAULT_PLAN: 'enterprise', WEFT_LIMITS: 'off', WEFT_ALLOW_PRIVATE_NETWORK: 'true',
      WEFT_JOB_LEASE_MS: String(LEASE_MS),
    };
    const api = await spawnRole(env, 'api');
    const first = await spawnRole(env, 'worker');
    const db = await openDb(url);
    let second: Awaited<ReturnType<typeof spawnRole>> | undefined;
    try {
      // A first call of 3 s, then one of 20 s: SIGTERM comes during the second, which outlasts the
      // worker's 5 s grace, so each run is handed back.
      const id = await deployWorkflow(api.url, apiKey, workspaceId, 'long', twoHitDefinition(upstream.url, 3_000, 20_000));
      const runs = await Promise.all(Array.from({ length: 6 }, (_, i) =>
        request(`${api.url}/api/workflows/${id}/execute`, 'POST', { i, async: true }, { 'x-api-key': apiKey })));
      expect(runs.map((r) => r.status)).toEqual(Array(6).fill(202));
      // All six on the first worker (the second starts only now).
      await waitFor('all six runs to start on the first worker', async () => {
        const [r] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM executions WHERE status = 'processing'");
        return r?.n === 6 ? true : undefined;
      }, 60_000, 100);
      second = await spawnRole(env, 'worker');
      // Past their first call (recorded) and inside the second.
      await waitFor('all six runs to record their first call', async () => {
        const [r] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM execution_steps WHERE block_id = 'a'");
        return r?.n === 6 ? true : undefined;
      }, 90_000, 100);
      const [{ n: doneBefore }] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM executions WHERE status = 'completed'") as [{ n: number }];
      expect(doneBefore).toBe(0);
      const termAt = Date.now();
      first.child.kill('SIGTERM');
      expect(await exitOf(first), first.output().slice(-3000)).toBe(0);
      const exitedAfter = Date.now() - termAt;
      const rows = await waitFor('every run to complete', async () => {
        const r = await db.query<{ status: string; attempts: number }>('SELECT status, attempts FROM executions WHERE workflow_id = $1', [id]);
        return r.every((x) => x.status === 'completed' || x.status === 'failed') ? r : undefined;
      }, 180_000, 250);
      const doneAfter = Date.now() - termAt;
      console.log(`worker SIGTERM: exited after ${exitedAfter} ms, every run completed ${doneAfter} ms after SIGTERM`);
      expect(rows.map((r) => r.status)).toEqual(Array(6).fill('completed'));
      expect(rows.map((r) => r.attempts)).toEqual(Array(6).fill(2)); // handed back once, resumed by the second worker
      // Handed back, not left to lapse: resumed long before the lease (120 s) would have expired.
      expect(doneAfter).toBeLessThan(LEASE_MS / 2);
      // The first call of each run was recorded before the hand-back and not made again; the second,
      // interrupted, was made again by the new holder.
      for (let i = 0; i < 6; i++) {
        expect(upstream.hits.get(`/hit/${i}/a`)?.length).toBe(1);
        expect(upstream.hits.get(`/hit/${i}/b`)?.length).toBe(2);
      }
    } finally {
      await db.close();
      await Promise.all([api, first, ...(second ? [second] : [])].map((p) => kill(p)));
    }
  }, 240_000);

  it('SIGTERM on an API process: requests in flight are answered before it exits', async () => {
    const { url, apiKey, workspaceId } = await prepareDatabase(pg, 'weft_term_api');
    const env = {
      DATABASE_URL: url, REDIS_URL: redis.url, WEFT_DEFAULT_PLAN: 'enterprise', WEFT_LIMITS: 'off', WEFT_ALLOW_PRIVATE_NETWORK: 'true',
      LOG_LEVEL: 'info', // its lines are printed when the exit code is wrong
    };
    const api = await spawnRole(env, 'api');
    try {
      // A sync run of about 4 s (two calls of 2 s each).
      const id = await deployWorkflow(api.url, apiKey, workspaceId, 'sync-slow', twoHitDefinition(upstream.url, 2_000));
      const inFlight = Array.from({ length: 5 }, (_, i) =>
        request(`${api.url}/api/workflows/${id}/execute`, 'POST', { i: 1000 + i }, { 'x-api-key': apiKey }));
      await waitFor('the requests to reach the upstream', async () =>
        ([0, 1, 2, 3, 4].every((i) => upstream.hits.has(`/hit/${1000 + i}/a`)) ? true : undefined), 60_000, 50);
      api.child.kill('SIGTERM');
      const answers = await Promise.all(inFlight);
      expect(answers.map((a) => a.status)).toEqual(Array(5).fill(200));
      expect(answers.every((a) => a.body.success === true)).toBe(true);
      expect(await exitOf(api), api.output().slice(-3000)).toBe(0);
      // After it exits nothing listens; the caller's retry goes to another API process.
      await expect(fetch(`${api.url}/healthz`)).rejects.toThrow();
    } finally {
      await kill(api);
    }
  }, 180_000);
});
