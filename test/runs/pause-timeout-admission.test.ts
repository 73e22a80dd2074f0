// A pause whose timeout approves resumes like any async run of its account: admitted (usage cap, rate, a
// concurrency slot) before its job is queued. Before, the timeout's resume took no slot, so a workspace could
// start many runs that pause at once and come back a second later as runs outside its plan's limit, holding
// the shared workers (a security audit filled them and made another workspace's runs wait 116 s).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { start } from '../support/workflows.js';

const plans = JSON.stringify({ team: { syncPerMinute: 600, asyncPerMinute: 600, apiPerMinute: 600, concurrentExecutions: 1 } });

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'team', WEFT_PLAN_LIMITS: plans } });
});
afterAll(async () => {
  await t?.close();
});

describe('pauses whose timeout approves, on a plan of one run at a time', () => {
  it('resume one at a time: each waits for the slot, none is lost', async () => {
    const ws = await createWorkspace(t.server.ctx.db, `timeouts-${randomUUID().slice(0, 8)}`, t.userId, 'team');
    const { secret } = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
    const call = (method: string, path: string, body?: unknown) => request(t.url + path, method, body, { 'x-api-key': secret });
    const definition = {
      blocks: [
        start(),
        { id: 'gate', type: 'human', name: 'Gate', config: { fields: [], timeoutSeconds: 3, onTimeout: 'approve' } },
        { id: 'hold', type: 'wait', name: 'Hold', config: { seconds: 1 } },
      ],
      edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'hold' }],
    };
    const created = await call('POST', '/api/v1/workflows', { workspaceId: ws.id, name: 'gated', definition });
    expect(created.status, created.text).toBe(201);
    const wf: string = created.body.data.workflow.id;
    expect((await call('POST', `/api/v1/workflows/${wf}/deploy`)).status).toBe(200);

    // Three runs, each admitted once the one before has paused (a paused run holds no slot), well inside the
    // first one's timeout.
    const paused: string[] = [];
    for (let i = 0; i < 3; i++) {
      const queued = await call('POST', `/api/workflows/${wf}/execute`, { async: true });
      expect(queued.status, queued.text).toBe(202);
      const id: string = queued.body.executionId;
      await expect.poll(async () => (await call('GET', `/api/v1/logs/${id}`)).body.data?.status, { timeout: 20_000, interval: 20 }).toBe('paused');
      paused.push(id);
    }

    // Every timeout fires; the resumes run one after another, never two at once.
    const resumes = async () => (await call('GET', `/api/v1/logs?workspaceId=${ws.id}&workflowId=${wf}&trigger=resume&limit=50`)).body.data as
      { id: string; status: string; startedAt: string; endedAt: string | null }[];
    await expect.poll(async () => (await resumes()).filter((r) => r.status === 'completed').length, { timeout: 60_000, interval: 250 }).toBe(3);
    const spans = (await resumes()).map((r) => [Date.parse(r.startedAt), Date.parse(r.endedAt ?? '')] as const).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0], `resume ${i} started before resume ${i - 1} ended`).toBeGreaterThanOrEqual(spans[i - 1]![1]);
    // The paused runs carry the resumed state.
    for (const id of paused) {
      const log = await call('GET', `/api/v1/logs/${id}`);
      expect(log.body.data.status, log.text).toBe('completed');
    }
  }, 90_000);
});
