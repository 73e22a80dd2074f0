import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../support/harness.js';
import {
  countingUpstream, deployWorkflow, kill, openDb, prepareDatabase, sleep, spawnRole, startPostgres, startRedis, twoHitDefinition, waitFor,
  type ThrowawayPostgres, type ThrowawayRedis,
} from './support.js';

/**
 * Redis lost under load (a throwaway redis-server without persistence, on a private port): restarted,
 * flushed, and away for a while. No accepted run is lost (the database rows are dispatched again by
 * the job sweep), and the limits fail safe: closed while Redis cannot be reached (503 with
 * Retry-After, nothing admitted unchecked), open on the state a restart or flush lost (buckets start
 * full again, forgotten slots free).
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

describe('Redis restarted, flushed and away', () => {
  it('no accepted run is lost; limits refuse with 503 while Redis is away and admit again after', async () => {
    const { url, apiKey, workspaceId } = await prepareDatabase(pg, 'weft_redis');
    const env = {
      DATABASE_URL: url, REDIS_URL: redis.url, WEFT_DEFAULT_PLAN: 'enterprise', WEFT_ALLOW_PRIVATE_NETWORK: 'true',
      WEFT_JOB_LEASE_MS: '8000',
    };
    const api = await spawnRole(env, 'api');
    const worker = await spawnRole(env, 'worker');
    const db = await openDb(url);
    const h = { 'x-api-key': apiKey };
    const accepted = new Set<string>();
    const refusals: { status: number; body: unknown; retryAfter: string | null }[] = [];
    try {
      const id = await deployWorkflow(api.url, apiKey, workspaceId, 'redis-lost', twoHitDefinition(upstream.url, 400));
      let running = true;
      const pending: Promise<void>[] = [];
      const submit = async (i: number) => {
        const executionId = randomUUID();
        for (let attempt = 0; attempt < 120; attempt++) {
          const r = await request(`${api.url}/api/workflows/${id}/execute`, 'POST', { i, async: true }, { ...h, 'x-execution-id': executionId });
          if (r.status === 202 || r.status === 409) {
            accepted.add(executionId);
            return;
          }
          refusals.push({ status: r.status, body: r.body, retryAfter: r.headers.get('retry-after') });
          await sleep(500);
        }
      };
      const loop = (async () => {
        for (let i = 0; running; i++) {
          pending.push(submit(i));
          await sleep(100);
        }
      })();
      await sleep(3_000);
      // Restarted without persistence: the queued BullMQ jobs and every limit counter are gone.
      await redis.restart();
      await sleep(4_000);
      redis.flush();
      await sleep(3_000);
      // Away: whatever needs a limit decision is refused cleanly, never admitted unchecked.
      await redis.stop();
      await sleep(4_000);
      const whileAway = await request(`${api.url}/api/workflows/${id}/execute`, 'POST', { i: -1, async: true }, h);
      await redis.start();
      await sleep(4_000);
      running = false;
      await loop;
      await Promise.all(pending);

      expect(whileAway.status).toBe(503);
      expect(whileAway.body).toMatchObject({ error: expect.any(String) });
      expect(whileAway.headers.get('retry-after')).toMatch(/^\d+$/);
      for (const r of refusals) expect(r).toMatchObject({ status: 503, body: { error: expect.any(String) }, retryAfter: expect.stringMatching(/^\d+$/) });
      console.log(`redis: accepted ${accepted.size}, refused while away ${refusals.length}`);
      expect(refusals.length).toBeGreaterThan(0);

      // Every accepted run completes, those whose BullMQ job was lost included; nothing else ran.
      const rows = await waitFor('every accepted run to finish', async () => {
        const r = await db.query<{ status: string }>('SELECT status FROM executions WHERE workflow_id = $1', [id]);
        return r.every((x) => x.status !== 'queued' && x.status !== 'processing') ? r : undefined;
      }, 120_000, 500);
      expect(rows).toHaveLength(accepted.size);
      expect(rows.filter((r) => r.status !== 'completed')).toEqual([]);
      for (const p of [api, worker]) expect(p.child.exitCode).toBeNull();
    } finally {
      await db.close();
      await Promise.all([api, worker].map((p) => kill(p)));
    }
  }, 300_000);
});
