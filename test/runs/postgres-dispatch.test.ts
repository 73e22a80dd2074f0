import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { bootstrappedDatabase, dbMode, request } from '../support/harness.js';
import { freePort, spawnServer } from '../support/cli.js';

/**
 * Dispatch without Redis: one API process and two worker processes on PostgreSQL alone. Every async
 * run is handed to a worker through the job_queue table and LISTEN/NOTIFY, and runs exactly once.
 */
let upstream: http.Server;
let upstreamUrl: string;
const hits = new Map<string, number>();

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    hits.set(req.url ?? '/', (hits.get(req.url ?? '/') ?? 0) + 1);
    res.setHeader('content-type', 'application/json');
    res.end('{}');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const addr = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(() => {
  upstream.closeAllConnections();
  upstream.close();
});

describe.runIf(dbMode() === 'postgres')('dispatch through PostgreSQL without Redis', () => {
  it('1 API and 2 worker processes: 50 async runs each complete exactly once', async () => {
    const { apiKey, workspaceId, env: base, where } = await bootstrappedDatabase();
    const env = { ...base, REDIS_URL: '', WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_LIMITS: 'off' };
    const h = { 'x-api-key': apiKey };
    const api = await spawnServer(env, await freePort(), 'api');
    const workers = await Promise.all([spawnServer(env, 0, 'worker'), spawnServer(env, 0, 'worker')]);
    const db = await connectDatabase({ databaseUrl: where.databaseUrl, dataDir: '' });
    try {
      const created = await request(`${api.url}/api/v1/workflows`, 'POST', {
        workspaceId, name: 'pg-dispatch',
        definition: {
          blocks: [{ id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'i', type: 'number' }] } },
            { id: 'hit', type: 'http', name: 'Hit', config: { url: `${upstreamUrl}/hit/<start.i>` } }],
          edges: [{ from: 'start', to: 'hit' }],
        },
      }, h);
      const id = created.body.data.workflow.id;
      expect((await request(`${api.url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, h)).status).toBe(200);

      // Each worker process listens for wake-ups (the API process only enqueues).
      const listeners = await db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'weft-queue' AND query LIKE 'LISTEN%'");
      expect(listeners).toHaveLength(2);

      const accepted = await Promise.all(Array.from({ length: 50 }, (_, i) =>
        request(`${api.url}/api/workflows/${id}/execute`, 'POST', { i, async: true }, h)));
      expect(accepted.map((r) => r.status)).toEqual(Array(50).fill(202));

      let rows: { status: string; attempts: number; wait_ms: number }[] = [];
      for (let k = 0; k < 600; k++) {
        rows = await db.query("SELECT status, attempts, EXTRACT(EPOCH FROM (started_at - created_at)) * 1000 AS wait_ms FROM executions WHERE workflow_id = $1", [id]);
        if (rows.length === 50 && rows.every((r) => r.status === 'completed' || r.status === 'failed')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(rows.map((r) => r.status)).toEqual(Array(50).fill('completed'));
      expect(rows.map((r) => r.attempts)).toEqual(Array(50).fill(1)); // each leased once: no second delivery ran it
      expect([...hits.keys()].sort()).toEqual(Array.from({ length: 50 }, (_, i) => `/hit/${i}`).sort());
      expect([...hits.values()]).toEqual(Array(50).fill(1));
      // Finished dispatches leave nothing behind in the queue table.
      for (let k = 0; k < 50 && (await db.query('SELECT 1 FROM job_queue')).length > 0; k++) await new Promise((r) => setTimeout(r, 100));
      expect(await db.query('SELECT 1 FROM job_queue')).toEqual([]);

      // Below saturation: one run at a time, each waited for.
      const paced: number[] = [];
      for (let i = 100; i < 110; i++) {
        const r = await request(`${api.url}/api/workflows/${id}/execute`, 'POST', { i, async: true }, h);
        for (let k = 0; k < 300; k++) {
          const [row] = await db.query<{ status: string; wait_ms: number }>('SELECT status, EXTRACT(EPOCH FROM (started_at - created_at)) * 1000 AS wait_ms FROM executions WHERE id = $1', [r.body.executionId]);
          if (row?.status === 'completed') {
            paced.push(Number(row.wait_ms));
            break;
          }
          await new Promise((res) => setTimeout(res, 10));
        }
      }
      expect(paced).toHaveLength(10);
      // Printed, not asserted (the machine is shared): the wait from commit to a worker starting the run.
      const waits = rows.map((r) => Number(r.wait_ms)).sort((a, b) => a - b);
      paced.sort((a, b) => a - b);
      console.log(`PostgreSQL dispatch, 2 workers: queue wait of 50 runs at once p50 ${waits[25].toFixed(1)} ms, max ${waits[49].toFixed(1)} ms;`
        + ` one at a time p50 ${paced[5].toFixed(1)} ms, max ${paced[9].toFixed(1)} ms`);
    } finally {
      await db.close();
      for (const s of [api, ...workers]) {
        s.child.kill('SIGTERM');
        await new Promise((r) => s.child.once('exit', r));
      }
    }
  }, 120_000);
});
