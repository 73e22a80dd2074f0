// GET /api/v1/workflows/{id}/versions: deployed versions, newest first, with cursor paging.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

let t: TestServer;
let readKey: string;
let adminKey: string;
beforeAll(async () => {
  t = await startTestServer();
  const reader = await createUser(t.server.ctx.db, `versions-reader-${Date.now()}@example.com`);
  await addMember(t.server.ctx.db, t.workspaceId, reader.id, 'read');
  readKey = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: reader.id, type: 'personal' })).secret;
  adminKey = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: t.userId, type: 'personal' })).secret;
});
afterAll(async () => {
  await t?.close();
});

const def = (code: string) => ({ blocks: [start(), fn('f', code, 'F')], edges: [{ from: 'start', to: 'f' }] });
const withLoop = {
  blocks: [
    start(),
    { id: 'each', type: 'loop', name: 'Each', config: { kind: 'forEach', items: [1, 2] }, blocks: [fn('a', 'return 1', 'A'), fn('b', 'return 2', 'B')] },
  ],
  edges: [{ from: 'start', to: 'each' }, { from: 'a', to: 'b' }],
};

const versions = (id: string, query = '', key = t.apiKey) => request(`${t.url}/api/v1/workflows/${id}/versions${query}`, 'GET', undefined, { 'x-api-key': key });

describe('workflow versions', () => {
  it('lists deployed versions newest first with the active one, who deployed it and a summary', async () => {
    const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'versions-list', definition: def('return 1') });
    const id = c.body.data.workflow.id;
    const empty = await versions(id);
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ success: true, data: [] });
    expect(empty.body.nextCursor).toBeUndefined();

    // v1 by a workspace key, v2 (with a loop) by the admin's personal key, v3 by the workspace key again.
    await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    await t.call('PUT', `/api/v1/workflows/${id}`, { definition: withLoop });
    expect((await request(`${t.url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, { 'x-api-key': adminKey })).status).toBe(200);
    await t.call('PUT', `/api/v1/workflows/${id}`, { definition: def('return 3') });
    await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    await t.call('POST', `/api/v1/workflows/${id}/rollback`, { version: 2 });

    const r = await versions(id);
    expect(r.status).toBe(200);
    const list = r.body.data;
    expect(list.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    expect(list.map((v: { isActive: boolean }) => v.isActive)).toEqual([false, true, false]);
    expect(list[1]).toMatchObject({ deployedBy: t.userId, blockCount: 4, edgeCount: 2 });
    expect(list[0]).toMatchObject({ deployedBy: null, blockCount: 2, edgeCount: 1 });
    for (const v of list) {
      expect(Object.keys(v).sort()).toEqual(['blockCount', 'createdAt', 'deployedBy', 'description', 'edgeCount', 'id', 'isActive', 'name', 'version']);
      expect(Date.parse(v.createdAt)).toBeGreaterThan(0);
    }
    expect(new Set(list.map((v: { id: string }) => v.id)).size).toBe(3);
    // The active version's id is what a run of it records.
    const run = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect((await t.call('GET', `/api/v1/logs/${run.body.executionId}`)).body.data.deploymentVersionId).toBe(list[1].id);
    expect(r.body.limits).toBeDefined();

    // A rollback without a body activates the version before the active one.
    const bare = await request(`${t.url}/api/v1/workflows/${id}/rollback`, 'POST', undefined, { 'x-api-key': t.apiKey });
    expect(bare.status, bare.text).toBe(200);
    expect(bare.body.data.version).toBe(1);
    expect((await versions(id)).body.data.map((v: { isActive: boolean }) => v.isActive)).toEqual([false, false, true]);
    await t.call('POST', `/api/v1/workflows/${id}/rollback`, { version: 2 });

    // Undeployed: the versions stay, none active.
    await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
    expect((await versions(id)).body.data.map((v: { isActive: boolean }) => v.isActive)).toEqual([false, false, false]);

    // A read member may list them.
    expect((await versions(id, '', readKey)).status).toBe(200);
  });

  it('counts blocks at every depth of nesting, as the database keeps them beside each version', async () => {
    // start, a parallel holding a loop (holding two blocks) and a function: six blocks, two edges at the top.
    const nested = {
      blocks: [
        start(),
        {
          id: 'fan', type: 'parallel', name: 'Fan', config: { kind: 'count', count: 2 },
          blocks: [
            { id: 'each', type: 'loop', name: 'Each', config: { kind: 'forEach', items: [1, 2] }, blocks: [fn('a', 'return 1', 'A'), fn('b', 'return 2', 'B')] },
            fn('c', 'return 3', 'C'),
          ],
        },
      ],
      edges: [{ from: 'start', to: 'fan' }, { from: 'a', to: 'b' }],
    };
    const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'versions-nested', definition: nested });
    expect(c.status, c.text).toBe(201);
    const id = c.body.data.workflow.id;
    expect((await t.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    const r = await versions(id);
    expect(r.body.data).toHaveLength(1);
    expect(r.body.data[0]).toMatchObject({ version: 1, blockCount: 6, edgeCount: 2, isActive: true });
  });

  it('pages with limit and cursor', async () => {
    const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'versions-paging', definition: def('return 0') });
    const id = c.body.data.workflow.id;
    for (let i = 1; i <= 5; i++) {
      await t.call('PUT', `/api/v1/workflows/${id}`, { definition: def(`return ${i}`) });
      await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    }
    const seen: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await versions(id, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.data.map((v: { version: number }) => v.version));
      cursor = r.body.nextCursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual([5, 4, 3, 2, 1]);
    expect(pages).toBe(3);
    // Exactly a page: no cursor on it.
    const all = await versions(id, '?limit=5');
    expect(all.body.data).toHaveLength(5);
    expect(all.body.nextCursor).toBeUndefined();
  });

  it('refuses bad parameters with 400 and hides unknown and foreign workflows as 404', async () => {
    const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'versions-bad', definition: def('return 0') });
    const id = c.body.data.workflow.id;
    const bogusCursor = Buffer.from(JSON.stringify({ v: 'x' })).toString('base64url');
    for (const q of ['?limit=0', '?limit=101', '?limit=abc', '?limit=1.5', '?cursor=%%%', `?cursor=${bogusCursor}`, `?cursor=${'a'.repeat(600)}`]) {
      const r = await versions(id, q);
      expect(r.status, q).toBe(400);
      expect(typeof r.body.error, q).toBe('string');
    }
    expect((await versions('00000000-0000-4000-8000-000000000000')).body.error).toBe('Workflow not found');
    expect((await versions('00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await versions('nope')).status).toBe(404);

    const other = await createWorkspace(t.server.ctx.db, `versions-other-${Date.now()}`, t.userId);
    const otherKey = (await createKey(t.server.ctx.db, { workspaceId: other.id, userId: t.userId, type: 'workspace' })).secret;
    const theirs = await request(`${t.url}/api/v1/workflows`, 'POST', { workspaceId: other.id, name: 'theirs', definition: def('return 0') }, { 'x-api-key': otherKey });
    expect(theirs.status).toBe(201);
    const foreign = await versions(theirs.body.data.workflow.id);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('Workflow not found');
    expect((await request(`${t.url}/api/v1/workflows/${id}/versions`, 'GET')).status).toBe(401);
  });
});
