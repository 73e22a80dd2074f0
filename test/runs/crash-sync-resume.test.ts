// A sync resume whose server is killed mid-run leaves a resume claim behind. Its lease lapses (or, embedded,
// the restarted server knows it is dead at once) and the claim is released: the pause point can be
// resumed again and the run completes, instead of every later resume answering 409 for good.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnServer } from '../support/cli.js';
import { bootstrappedDatabase, request } from '../support/harness.js';
import { startHangingUpstream, type HangingUpstream } from '../support/hanging-upstream.js';

let upstream: HangingUpstream;
let hang = true;

beforeAll(async () => {
  upstream = await startHangingUpstream({ hold: () => hang, answer: () => ({ shipped: true }) });
});
afterAll(() => upstream.close());

describe('a sync resume killed mid-run', () => {
  it('is released after a restart: the pause point is resumed again and the run completes', async () => {
    const { workspaceId, apiKey, env: base } = await bootstrappedDatabase();
    const env = { ...base, WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_JOB_LEASE_MS: '3000' };
    const headers = { 'x-api-key': apiKey };
    let server = await spawnServer(env, await freePort());
    try {
      const created = await request(`${server.url}/api/v1/workflows`, 'POST', {
        workspaceId, name: 'approve-then-ship',
        definition: {
          blocks: [
            { id: 'start', type: 'start', name: 'Start', config: {} },
            { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Ship it?', fields: [{ name: 'decision', type: 'string', required: true }] } },
            { id: 'ship', type: 'http', name: 'Ship', config: { url: `${upstream.url}/ship` } },
          ],
          edges: [{ from: 'start', to: 'approval' }, { from: 'approval', to: 'ship' }],
        },
      }, headers);
      expect(created.status).toBe(201);
      const wf = created.body.data.workflow.id;
      expect((await request(`${server.url}/api/v1/workflows/${wf}/deploy`, 'POST', undefined, headers)).status).toBe(200);

      const paused = await request(`${server.url}/api/workflows/${wf}/execute`, 'POST', {}, headers);
      expect(paused.status).toBe(200);
      expect(paused.body.status).toBe('paused');
      const exec = paused.body.executionId;
      const resumePath = `/api/resume/${wf}/${exec}/approval`;

      const hung = new Promise<void>((r) => (upstream.onHold = r));
      const first = request(`${server.url}${resumePath}`, 'POST', { input: { decision: 'yes' } }, headers).catch(() => undefined);
      await hung;
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      await first;

      hang = false;
      server = await spawnServer(env, await freePort());
      // Until the dead claim's lease lapses (PostgreSQL: another process could still hold it) the point is
      // busy; then it is released and resumable again.
      let again = await request(`${server.url}${resumePath}`, 'POST', { input: { decision: 'yes, again' } }, headers);
      for (const until = Date.now() + 30_000; again.status === 409 && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 200));
        again = await request(`${server.url}${resumePath}`, 'POST', { input: { decision: 'yes, again' } }, headers);
      }
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ success: true, status: 'completed', output: { data: { shipped: true } } });

      const record = await request(`${server.url}/api/resume/${wf}/${exec}`, 'GET', undefined, headers);
      expect(record.body.status).toBe('fully_resumed');
      expect(record.body.queue.map((e: { status: string }) => e.status)).toEqual(['failed', 'completed']);
      expect(record.body.queue[0].failureReason).toMatch(/Interrupted/);
      const log = await request(`${server.url}/api/v1/logs/${exec}`, 'GET', undefined, headers);
      expect(log.body.data.status).toBe('completed');
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);
});
