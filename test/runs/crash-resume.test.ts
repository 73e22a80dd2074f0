import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrappedDatabase, request } from '../support/harness.js';
import { startHangingUpstream, type HangingUpstream } from '../support/hanging-upstream.js';
import { freePort, spawnServer } from '../support/cli.js';

/**
 * Kills a server with SIGKILL while an async run is between blocks, starts a new one on the same
 * database, and checks the run finishes without re-running the blocks that had completed.
 */
let upstream: HangingUpstream;
let holdSlow = true;

beforeAll(async () => {
  upstream = await startHangingUpstream({ hold: (path) => path === '/slow' && holdSlow, answer: (path) => ({ path }) });
});
afterAll(() => upstream.close());

describe('durable async runs', () => {
  it('continue from the last completed block after the process is killed', async () => {
    const { workspaceId, apiKey: secret, env: base } = await bootstrappedDatabase();
    const boot = { workspaceId };
    const env = { ...base, WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_JOB_LEASE_MS: '3000' };
    const headers = { 'x-api-key': secret };

    let server = await spawnServer(env, await freePort());
    const get = (id: string, path: string) => ({ id, type: 'http', name: id, config: { url: `${upstream.url}${path}` } });
    const created = await request(`${server.url}/api/v1/workflows`, 'POST', {
      workspaceId: boot.workspaceId, name: 'durable',
      definition: {
        blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, get('first', '/first'), get('slow', '/slow'), get('last', '/last')],
        edges: [{ from: 'start', to: 'first' }, { from: 'first', to: 'slow' }, { from: 'slow', to: 'last' }],
      },
    }, headers);
    expect(created.status).toBe(201);
    const id = created.body.data.workflow.id;
    expect((await request(`${server.url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, headers)).status).toBe(200);

    let slowCalls = 0;
    const bothSlow = new Promise<void>((r) => (upstream.onHold = () => ++slowCalls === 2 && r()));
    const queued = await request(`${server.url}/api/workflows/${id}/execute`, 'POST', { async: true }, headers);
    expect(queued.status).toBe(202);
    // A sync run with a caller-chosen id is in flight too when the process dies.
    const syncId = `sync-crash-${Date.now()}`;
    const sync = request(`${server.url}/api/workflows/${id}/execute`, 'POST', {}, { ...headers, 'x-execution-id': syncId }).catch(() => undefined);
    await bothSlow;
    server.child.kill('SIGKILL');
    await new Promise((r) => server.child.once('exit', r));
    await sync;
    expect(upstream.hits['/first']).toBe(2); // once for each run
    expect(upstream.hits['/last']).toBeUndefined();

    holdSlow = false;
    server = await spawnServer(env, await freePort());
    try {
      let job: any;
      const deadline = Date.now() + 30_000;
      do {
        await new Promise((r) => setTimeout(r, 100));
        job = (await request(`${server.url}/api/jobs/${queued.body.jobId}`, 'GET', undefined, headers)).body;
      } while (job.status !== 'completed' && job.status !== 'failed' && Date.now() < deadline);
      expect(job.status).toBe('completed');
      expect(job.output.output).toMatchObject({ data: { path: '/last' } });
      expect(upstream.hits['/first']).toBe(2); // the async run replayed its recorded step instead of running it again
      expect(upstream.hits['/slow']).toBe(3); // it never completed in the async run, so it ran again
      expect(upstream.hits['/last']).toBe(1);
      const log = await request(`${server.url}/api/v1/logs/${queued.body.executionId}`, 'GET', undefined, headers);
      const first = log.body.data.trace.find((s: { blockId: string }) => s.blockId === 'first');
      expect(first.status).toBe('replayed');
      // The interrupted sync run is closed as failed, not left running (once its lease has lapsed: the
      // next sweep after that closes it, which may come a little after the async run's takeover).
      let syncLog = await request(`${server.url}/api/v1/logs/${syncId}`, 'GET', undefined, headers);
      for (const until = Date.now() + 30_000; syncLog.body.data.status === 'processing' && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 100));
        syncLog = await request(`${server.url}/api/v1/logs/${syncId}`, 'GET', undefined, headers);
      }
      expect(syncLog.body.data.status).toBe('failed');
      expect(syncLog.body.data.error).toMatch(/Interrupted/);
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.once('exit', r));
    }
  }, 120_000);
});
