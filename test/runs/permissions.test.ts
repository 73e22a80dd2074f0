// Decision (README, permissions): read members may run deployed workflows, as in the reference; they
// cannot change, deploy or resume them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
let readKey: string;
beforeAll(async () => {
  t = await startTestServer();
  const user = await createUser(t.server.ctx.db, `reader-${Date.now()}@example.com`);
  await addMember(t.server.ctx.db, t.workspaceId, user.id, 'read');
  readKey = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: user.id, type: 'personal' })).secret;
});
afterAll(async () => {
  await t?.close();
});

describe('a read member', () => {
  it('runs a deployed workflow but cannot change or deploy it', async () => {
    const definition = { blocks: [start(), fn('answer', 'return { ok: true }')], edges: [{ from: 'start', to: 'answer' }] };
    const id = await deploy(t, 'read-run', definition);
    const h = { 'x-api-key': readKey };
    const run = await request(`${t.url}/api/workflows/${id}/execute`, 'POST', {}, h);
    expect(run.status).toBe(200);
    expect(run.body.output).toEqual({ ok: true });
    expect((await request(`${t.url}/api/v1/workflows/${id}`, 'PUT', { definition }, h)).status).toBe(403);
    expect((await request(`${t.url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, h)).status).toBe(403);
    expect((await request(`${t.url}/api/v1/workflows/${id}`, 'DELETE', undefined, h)).status).toBe(403);
  });
});
