// Deliveries whose process is killed mid-way. A result-mode delivery killed after its run made a side effect
// and before its answer was stored: the retry, on a new process, takes the claim over and finds that run
// (interrupted, so it answers with its failure) instead of running the workflow, and its side effects, a second
// time. An acknowledged delivery killed after its answer went out (its stored copy commits without waiting for
// the disk, src/webhooks/store.ts): the retry gets the same answer and starts no second run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnServer } from '../support/cli.js';
import { bootstrappedDatabase, request } from '../support/harness.js';
import { startHangingUpstream, type HangingUpstream } from '../support/hanging-upstream.js';
import { hook } from './support.js';

let upstream: HangingUpstream;

beforeAll(async () => {
  upstream = await startHangingUpstream({ hold: (path) => path.startsWith('/hang'), answer: () => ({ ok: true }) });
});
afterAll(() => upstream.close());

/** A fresh database and a server on it with short leases (so a killed holder's claim and run lapse quickly). */
async function crashableServer() {
  const { workspaceId, apiKey, env: base } = await bootstrappedDatabase();
  const env = { ...base, WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_WEBHOOK_LEASE_MS: '1500', WEFT_JOB_LEASE_MS: '3000' };
  return { workspaceId, headers: { 'x-api-key': apiKey }, env, server: await spawnServer(env, await freePort()) };
}

/** Creates and deploys a workflow; returns its id. */
async function deployed(url: string, headers: Record<string, string>, workspaceId: string, name: string, definition: unknown): Promise<string> {
  const created = await request(`${url}/api/v1/workflows`, 'POST', { workspaceId, name, definition }, headers);
  expect(created.status).toBe(201);
  const id = created.body.data.workflow.id as string;
  expect((await request(`${url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, headers)).status).toBe(200);
  return id;
}

describe('a delivery killed between its run and its answer', () => {
  it('is not run again by its retry on a new process', async () => {
    const { workspaceId, headers, env, ...started } = await crashableServer();
    let server = started.server;
    try {
      const call = (id: string, path: string) => ({ id, type: 'http', name: id, config: { url: `${upstream.url}${path}` } });
      const id = await deployed(server.url, headers, workspaceId, 'crashy', {
        blocks: [hook({ path: 'crashy', responseMode: 'result' }), call('charge', '/charge'), call('wait', '/hang')],
        edges: [{ from: 'hook', to: 'charge' }, { from: 'charge', to: 'wait' }],
      });

      const hung = new Promise<void>((r) => (upstream.onHold = r));
      const delivery = { 'content-type': 'application/json', 'x-github-delivery': 'crash-delivery-1' };
      const first = request(`${server.url}/api/webhooks/trigger/crashy`, 'POST', '{"a":1}', delivery).catch(() => undefined);
      await hung; // the side effect is done, the run goes on
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      await first;
      expect(upstream.hits['/charge']).toBe(1);

      server = await spawnServer(env, await freePort());
      // While the killed run's own lease lasts it may still count as running (409, retry later); once it
      // is closed as interrupted, the delivery answers with that failure.
      let retry = await request(`${server.url}/api/webhooks/trigger/crashy`, 'POST', '{"a":1}', delivery);
      for (const until = Date.now() + 30_000; retry.status === 409 && Date.now() < until;) {
        expect(retry.body).toEqual({ error: 'This delivery is still being processed' });
        await new Promise((r) => setTimeout(r, 200));
        retry = await request(`${server.url}/api/webhooks/trigger/crashy`, 'POST', '{"a":1}', delivery);
      }
      expect(retry.status).toBe(500);
      expect(retry.body).toMatchObject({ success: false, error: expect.stringMatching(/Interrupted/) });
      expect(upstream.hits['/charge']).toBe(1);
      expect(upstream.hits['/hang']).toBe(1);
      // A further duplicate gets the same answer, still without a run.
      const again = await request(`${server.url}/api/webhooks/trigger/crashy`, 'POST', '{"a":1}', delivery);
      expect(again.text).toBe(retry.text);
      expect(upstream.hits['/charge']).toBe(1);
      // One run in all, read through the logs API (the same on both databases).
      const logs = await request(`${server.url}/api/v1/logs?workspaceId=${workspaceId}&workflowId=${id}`, 'GET', undefined, headers);
      expect(logs.status).toBe(200);
      expect(logs.body.data.map((r: { status: string }) => r.status)).toEqual(['failed']);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);
});

describe('an acknowledged delivery whose process is killed after its answer', () => {
  it('answers its retry on a new process the same, without a second run', async () => {
    const { workspaceId, headers, env, ...started } = await crashableServer();
    let server = started.server;
    try {
      const id = await deployed(server.url, headers, workspaceId, 'acked', {
        blocks: [
          hook({ path: 'acked', responseMode: 'custom', responseStatus: 201, responseBody: { queued: true } }),
          { id: 'wait', type: 'http', name: 'wait', config: { url: `${upstream.url}/hang-acked` } },
        ],
        edges: [{ from: 'hook', to: 'wait' }],
      });

      // The run hangs in its HTTP block, so nothing commits after the answer before the kill.
      const hung = new Promise<void>((r) => (upstream.onHold = r));
      const delivery = { 'content-type': 'application/json', 'x-github-delivery': 'acked-delivery-1' };
      const first = await request(`${server.url}/api/webhooks/trigger/acked`, 'POST', '{"a":1}', delivery);
      expect(first.status).toBe(201);
      expect(first.body).toEqual({ queued: true });
      await hung;
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));

      server = await spawnServer(env, await freePort());
      let retry = await request(`${server.url}/api/webhooks/trigger/acked`, 'POST', '{"a":1}', delivery);
      for (const until = Date.now() + 30_000; retry.status === 409 && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 200));
        retry = await request(`${server.url}/api/webhooks/trigger/acked`, 'POST', '{"a":1}', delivery);
      }
      expect(retry.status).toBe(first.status);
      expect(retry.text).toBe(first.text);
      // One run in all, read through the logs API.
      const logs = await request(`${server.url}/api/v1/logs?workspaceId=${workspaceId}&workflowId=${id}`, 'GET', undefined, headers);
      expect(logs.status).toBe(200);
      expect(logs.body.data).toHaveLength(1);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);
});
