import { describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { createKey, ensureBootstrap } from '../support/accounts.js';
import { dbMode, freshDatabase, request } from '../support/harness.js';
import { freePort, runCli, spawnServer } from '../support/cli.js';

describe.runIf(dbMode() === 'postgres' && Boolean(process.env.TEST_REDIS_URL))('scaled mode: api and worker processes', () => {
  it('runs async jobs queued by an API-only process in a separate worker process', async () => {
    const where = await freshDatabase();
    const db = await connectDatabase({ dataDir: '', databaseUrl: where.databaseUrl });
    const boot = await ensureBootstrap(db, 'enterprise');
    const { secret } = await createKey(db, { workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace' });
    await db.close();
    // A short lease: the worker renews it every 0.5 s, and sees a cancel asked through the API process then.
    const env = { DATABASE_URL: where.databaseUrl, REDIS_URL: process.env.TEST_REDIS_URL, WEFT_DEFAULT_PLAN: 'enterprise', WEFT_JOB_LEASE_MS: '1500' };
    const api = await spawnServer({ ...env }, await freePort(), 'api');
    const worker = await spawnServer({ ...env }, 0, 'worker');
    try {
      const h = { 'x-api-key': secret };
      const created = await request(`${api.url}/api/v1/workflows`, 'POST', {
        workspaceId: boot.workspaceId, name: 'scaled',
        definition: { blocks: [{ id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'n', type: 'number' }] } },
          { id: 'f', type: 'function', name: 'F', config: { code: 'return { pid: typeof process, n: <start.n> * 3 }' } }],
        edges: [{ from: 'start', to: 'f' }] },
      }, h);
      const id = created.body.data.workflow.id;
      await request(`${api.url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, h);
      const jobs = await Promise.all([1, 2, 3].map((n) => request(`${api.url}/api/workflows/${id}/execute`, 'POST', { n, async: true }, h)));
      for (const [i, j] of jobs.entries()) {
        let body: any;
        for (let k = 0; k < 100; k++) {
          body = (await request(`${api.url}/api/jobs/${j.body.jobId}`, 'GET', undefined, h)).body;
          if (body.status === 'completed' || body.status === 'failed') break;
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(body.status).toBe('completed');
        expect(body.output.output).toEqual({ pid: 'undefined', n: (i + 1) * 3 });
      }
      // A cancel asked through the API process stops the run in the worker process (v2 cancel endpoint).
      const slow = await request(`${api.url}/api/v1/workflows`, 'POST', {
        workspaceId: boot.workspaceId, name: 'scaled-slow',
        definition: { blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'nap', type: 'wait', name: 'Nap', config: { seconds: 60 } }],
          edges: [{ from: 'start', to: 'nap' }] },
      }, h);
      const slowId = slow.body.data.workflow.id;
      await request(`${api.url}/api/v1/workflows/${slowId}/deploy`, 'POST', undefined, h);
      const runId = (await request(`${api.url}/api/v2/workflows/${slowId}/execute`, 'POST', { async: true }, h)).body.data.runId;
      const runUrl = `${api.url}/api/v2/workflows/${slowId}/runs/${runId}`;
      const waitFor = async (status: string) => {
        for (let k = 0; k < 300; k++) {
          const r = (await request(runUrl, 'GET', undefined, h)).body.data;
          if (r.status === status) return r;
          await new Promise((res) => setTimeout(res, 50));
        }
        throw new Error(`run never ${status}`);
      };
      await waitFor('running');
      const cancelled = await request(`${runUrl}/cancel`, 'POST', undefined, h);
      expect(cancelled.body.data).toMatchObject({ success: true, durablyRecorded: true, locallyAborted: false, reason: 'recorded' });
      expect((await waitFor('cancelled')).endedAt).not.toBeNull();

      const refused = await runCli(['worker'], { DATABASE_URL: '', WEFT_DATA_DIR: '/tmp/weft-none' });
      expect(refused.code).not.toBe(0);
    } finally {
      for (const s of [api, worker]) {
        s.child.kill('SIGTERM');
        await new Promise((r) => s.child.once('exit', r));
      }
    }
  }, 120_000);
});
