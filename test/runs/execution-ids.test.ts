// Caller-chosen execution ids belong to the caller's workspace (security finding 5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

let t: TestServer;
let other: { workspaceId: string; key: string };
beforeAll(async () => {
  t = await startTestServer();
  const ws = await createWorkspace(t.server.ctx.db, `ids-other-${Date.now()}`, t.userId, 'enterprise');
  other = { workspaceId: ws.id, key: (await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' })).secret };
});
afterAll(async () => {
  await t?.close();
});

async function deployIn(workspaceId: string, key: string, name: string): Promise<string> {
  const h = { 'x-api-key': key };
  const created = await request(`${t.url}/api/v1/workflows`, 'POST', {
    workspaceId, name, definition: { blocks: [start(), fn('answer', `return { workspace: '${name}' }`)], edges: [{ from: 'start', to: 'answer' }] },
  }, h);
  const id = created.body.data.workflow.id;
  await request(`${t.url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, h);
  return id;
}

describe('caller-chosen execution ids', () => {
  it('are scoped to the workspace: another tenant cannot take or probe them', async () => {
    const mine = await deployIn(t.workspaceId, t.apiKey, 'ids-mine');
    const theirs = await deployIn(other.workspaceId, other.key, 'ids-theirs');
    const id = `order-${Date.now()}`;

    // The other tenant uses the id first: that must not block the owner, nor tell either that the other used it.
    const first = await request(`${t.url}/api/workflows/${theirs}/execute`, 'POST', { async: true }, { 'x-api-key': other.key, 'x-execution-id': id });
    expect(first.status).toBe(202);
    expect(first.body.executionId).toBe(id);
    const mineRun = await request(`${t.url}/api/workflows/${mine}/execute`, 'POST', {}, { 'x-api-key': t.apiKey, 'x-execution-id': id });
    expect(mineRun.status).toBe(200);
    expect(mineRun.body.executionId).toBe(id);
    expect(mineRun.body.output).toEqual({ workspace: 'ids-mine' });

    // A repeat within the same workspace is still refused.
    const repeat = await request(`${t.url}/api/workflows/${mine}/execute`, 'POST', {}, { 'x-api-key': t.apiKey, 'idempotency-key': id });
    expect(repeat.status).toBe(409);
    expect(repeat.body).toMatchObject({ code: 'EXECUTION_ID_CONFLICT', executionId: id });

    // Each tenant sees its own run under that id.
    const myLog = await request(`${t.url}/api/v1/logs/${id}`, 'GET', undefined, { 'x-api-key': t.apiKey });
    expect(myLog.status).toBe(200);
    expect(myLog.body.data).toMatchObject({ executionId: id, workflowId: mine });
    for (let i = 0; i < 100; i++) {
      const job = await request(`${t.url}/api/jobs/job_${id}`, 'GET', undefined, { 'x-api-key': other.key });
      expect(job.status).toBe(200);
      expect(job.body.metadata).toMatchObject({ executionId: id, workflowId: theirs });
      if (job.body.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    // The owner's key does not see the other tenant's async job (it is not a job in its workspace).
    const probe = await request(`${t.url}/api/jobs/job_${id}`, 'GET', undefined, { 'x-api-key': t.apiKey });
    expect(probe.status).toBe(404);
  });
});
