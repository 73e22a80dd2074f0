// Running the saved draft without deploying it: POST /api/workflows/{id}/execute with useDraftState.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

let t: TestServer;
let readKey: string;
let writeKey: string;
beforeAll(async () => {
  t = await startTestServer();
  const reader = await createUser(t.server.ctx.db, `draft-reader-${Date.now()}@example.com`);
  await addMember(t.server.ctx.db, t.workspaceId, reader.id, 'read');
  readKey = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: reader.id, type: 'personal' })).secret;
  const writer = await createUser(t.server.ctx.db, `draft-writer-${Date.now()}@example.com`);
  await addMember(t.server.ctx.db, t.workspaceId, writer.id, 'write');
  writeKey = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: writer.id, type: 'personal' })).secret;
});
afterAll(async () => {
  await t?.close();
});

const def = (code: string) => ({ blocks: [start([{ name: 'who', type: 'string' }]), fn('f', code, 'F')], edges: [{ from: 'start', to: 'f' }] });

async function create(name: string, code: string): Promise<string> {
  const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name, definition: def(code) });
  expect(c.status).toBe(201);
  return c.body.data.workflow.id;
}

const runDraft = (id: string, body: Record<string, unknown> = {}, key = t.apiKey, headers: Record<string, string> = {}) =>
  request(`${t.url}/api/workflows/${id}/execute`, 'POST', { useDraftState: true, ...body }, { 'x-api-key': key, ...headers });

describe('running the draft', () => {
  it('runs the saved draft of an undeployed workflow, logged as manual and billed, without deploying it', async () => {
    const id = await create('draft-undeployed', "return { hi: 'draft ' + <start.who> }");
    // Without the flag the undeployed workflow is refused as before.
    expect((await t.call('POST', `/api/workflows/${id}/execute`, { inputs: { who: 'x' } })).status).toBe(403);

    const r = await runDraft(id, { inputs: { who: 'one' } }, writeKey);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, output: { hi: 'draft one' } });

    const w = (await t.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow;
    expect(w).toMatchObject({ isDeployed: false, version: null });
    expect((await t.call('GET', `/api/v1/workflows/${id}/versions`)).body.data).toEqual([]);

    const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
    expect(log.status).toBe(200);
    expect(log.body.data).toMatchObject({ workflowId: id, trigger: 'manual', mode: 'sync', status: 'completed' });
    expect(log.body.data.costUsd).toBeGreaterThan(0);
    const manual = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}&trigger=manual`);
    expect(manual.body.data.map((l: { executionId: string }) => l.executionId)).toEqual([r.body.executionId]);

    // A first deploy after draft runs is still version 1.
    expect((await t.call('POST', `/api/v1/workflows/${id}/deploy`)).body.data.version).toBe(1);
  });

  it('runs the draft, not the deployed version, and each saved change at once', async () => {
    const id = await create('draft-vs-deployed', "return 'v1 ' + <start.who>");
    expect((await t.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    await t.call('PUT', `/api/v1/workflows/${id}`, { definition: def("return 'draft2 ' + <start.who>") });
    expect((await t.call('POST', `/api/workflows/${id}/execute`, { inputs: { who: 'a' } })).body.output).toBe('v1 a');
    expect((await runDraft(id, { inputs: { who: 'a' } })).body.output).toBe('draft2 a');
    // The same draft again, then a changed one.
    expect((await runDraft(id, { who: 'b' })).body.output).toBe('draft2 b');
    await t.call('PUT', `/api/v1/workflows/${id}`, { definition: def("return 'draft3 ' + <start.who>") });
    expect((await runDraft(id, { inputs: { who: 'c' } })).body.output).toBe('draft3 c');
    // useDraftState: false is the deployed version.
    expect((await t.call('POST', `/api/workflows/${id}/execute`, { useDraftState: false, inputs: { who: 'd' } })).body.output).toBe('v1 d');

    // Draft runs are not deployments: still one version, still v1 active, and the next deploy is v2.
    const versions = (await t.call('GET', `/api/v1/workflows/${id}/versions`)).body.data;
    expect(versions.map((v: { version: number }) => v.version)).toEqual([1]);
    const status = (await t.call('GET', `/api/workflows/${id}/status`)).body;
    expect(status).toMatchObject({ isDeployed: true, version: 1, needsRedeployment: true });
    expect((await t.call('POST', `/api/v1/workflows/${id}/deploy`)).body.data.version).toBe(2);
    // Rolling back goes to v1, never to a draft.
    expect((await t.call('POST', `/api/v1/workflows/${id}/rollback`, {})).body.data.version).toBe(1);
    expect((await t.call('POST', `/api/v1/workflows/${id}/rollback`, {})).status).toBe(400);
  });

  it('needs the write role, is sync only and validates the flag', async () => {
    const id = await create('draft-rules', "return 'x'");
    const read = await runDraft(id, {}, readKey);
    expect(read.status).toBe(403);
    expect(typeof read.body.error).toBe('string');
    // A read member may still run the deployed version.
    await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    expect((await request(`${t.url}/api/workflows/${id}/execute`, 'POST', {}, { 'x-api-key': readKey })).status).toBe(200);

    const asyncBody = await runDraft(id, { async: true });
    expect(asyncBody.status).toBe(400);
    expect(asyncBody.body.error).toBe('Async execution does not support draft or override execution controls');
    expect((await runDraft(id, {}, t.apiKey, { 'x-execution-mode': 'async' })).status).toBe(400);

    for (const bad of ['true', 1, null, {}]) {
      const r = await t.call('POST', `/api/workflows/${id}/execute`, { useDraftState: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(typeof r.body.error).toBe('string');
    }
  });

  it('answers 400 naming the block when the saved draft does not validate, like deploy', async () => {
    const id = await create('draft-invalid', "return 'ok'");
    // Make the stored draft invalid behind the API's back (a save would have refused it).
    await t.server.ctx.db.query(`UPDATE workflows SET definition = $2 WHERE id = $1`, [id, JSON.stringify(def('return <nope.x>'))]);
    const deploy = await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    const r = await runDraft(id);
    expect(r.status).toBe(400);
    expect(deploy.status).toBe(400);
    expect(r.body.error).toBe(deploy.body.error);
    expect(r.body.details.some((d: { blockId?: string }) => d.blockId === 'f')).toBe(true);
    const logs = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}`);
    expect(logs.body.data).toEqual([]);
  });

  it('is a 404 for unknown and foreign workflows', async () => {
    expect((await runDraft('00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await runDraft('not-a-uuid')).status).toBe(404);
  });

  it('pauses at a human block and resumes with the draft after a restart', async () => {
    const approval = {
      blocks: [
        start([{ name: 'item', type: 'string' }]),
        { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Buy it?', fields: [{ name: 'decision', type: 'string', required: true }] } },
        fn('after', "return 'draft: ' + <start.item> + ' ' + <approval.decision>", 'After'),
      ],
      edges: [{ from: 'start', to: 'approval' }, { from: 'approval', to: 'after' }],
    };
    const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'draft-human', definition: approval });
    const id = c.body.data.workflow.id;
    const run = await runDraft(id, { item: 'desk' });
    expect(run.status, run.text).toBe(200);
    const exec = run.body.executionId;
    expect(run.body.output.data._resume.contextId).toBe('approval');
    // The draft changes meanwhile; the paused run keeps the draft it started with.
    await t.call('PUT', `/api/v1/workflows/${id}`, { definition: { ...approval, blocks: [approval.blocks[0], approval.blocks[1], fn('after', "return 'changed'", 'After')] } });

    await t.close();
    t = await startTestServer({ reuse: { dataDir: t.config.dataDir, databaseUrl: t.config.databaseUrl } });
    const resumed = await t.call('POST', `/api/resume/${id}/${exec}/approval`, { input: { decision: 'yes' } });
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body).toMatchObject({ success: true, status: 'completed', output: 'draft: desk yes' });
  });
});
