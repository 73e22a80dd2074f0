import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const simple = (code = 'return { ok: true }') => ({ blocks: [start(), fn('f', code, 'F')], edges: [{ from: 'start', to: 'f' }] });

describe('workflow management', () => {
  it('creates, reads, replaces and deletes a workflow', async () => {
    const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'crud', description: 'd', definition: simple() });
    expect(c.status).toBe(201);
    expect(c.body.success).toBe(true);
    const w = c.body.data.workflow;
    expect(w).toMatchObject({ name: 'crud', description: 'd', isDeployed: false, deployedAt: null, version: null, workspaceId: t.workspaceId });
    const g = await t.call('GET', `/api/v1/workflows/${w.id}`);
    expect(g.body.data.workflow.definition.blocks).toHaveLength(2);
    const p = await t.call('PUT', `/api/v1/workflows/${w.id}`, { definition: simple('return 2') });
    expect(p.status).toBe(200);
    expect(p.body.data.workflow.definition.blocks[1].config.code).toBe('return 2');
    const d = await t.call('DELETE', `/api/v1/workflows/${w.id}`);
    expect(d.status).toBe(200);
    expect((await t.call('GET', `/api/v1/workflows/${w.id}`)).status).toBe(404);
    expect((await t.call('DELETE', `/api/v1/workflows/${w.id}`)).status).toBe(404);
  });

  it('rejects a duplicate name with 409', async () => {
    await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'dup', definition: simple() });
    const again = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'dup', definition: simple() });
    expect(again.status).toBe(409);
  });

  it('validates definitions with errors naming the block and field, and writes nothing', async () => {
    const count = async () => (await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM workflows'))[0].n;
    const before = await count();
    const cases: [unknown, RegExp][] = [
      [{ blocks: [start(), { id: 'x', type: 'teleport', name: 'X', config: {} }], edges: [] }, /teleport/],
      [{ blocks: [start(), fn('a', 'return 1', 'Same'), fn('b', 'return 2', 'same')], edges: [] }, /[Dd]uplicate|same/],
      [{ blocks: [start(), fn('a', 'return <nope.x>', 'A')], edges: [{ from: 'start', to: 'a' }] }, /nope/],
      [{ blocks: [start(), fn('a', 'return 1', 'A')], edges: [{ from: 'start', to: 'ghost' }] }, /ghost/],
      [{ blocks: [start(), fn('a', 'return 1', 'A'), fn('b', 'return 1', 'B')], edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'b' }, { from: 'b', to: 'a' }] }, /cycle/i],
    ];
    for (const [definition, pattern] of cases) {
      const r = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: `bad-${Math.random()}`, definition });
      expect(r.status, JSON.stringify(definition)).toBe(400);
      expect(r.body.error).toMatch(pattern);
      expect(Array.isArray(r.body.details)).toBe(true);
    }
    const withBlock = await t.call('POST', '/api/v1/workflows', {
      workspaceId: t.workspaceId, name: 'bad-ref', definition: { blocks: [start(), fn('a', 'return <nope.x>', 'A')], edges: [{ from: 'start', to: 'a' }] },
    });
    expect(withBlock.body.details.some((d: { blockId?: string }) => d.blockId === 'a')).toBe(true);
    expect(await count()).toBe(before);
  });

  it('deploys numbered versions, undeploys and rolls back', async () => {
    const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'versions', definition: simple('return 1') });
    const id = c.body.data.workflow.id;
    const status = async () => (await t.call('GET', `/api/workflows/${id}/status`)).body;
    expect(await status()).toEqual({ isDeployed: false, deployedAt: null, needsRedeployment: false, version: null });
    const d1 = await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    expect(d1.body.data).toMatchObject({ id, isDeployed: true, version: 1 });
    expect((await status()).needsRedeployment).toBe(false);
    await t.call('PUT', `/api/v1/workflows/${id}`, { definition: simple('return 2') });
    // The saved draft now differs from the deployed version.
    expect((await status()).needsRedeployment).toBe(true);
    const d2 = await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    expect(d2.body.data.version).toBe(2);
    const st = await status();
    expect(st.needsRedeployment).toBe(false);
    expect(st.isDeployed).toBe(true);
    expect(st.version).toBe(2);
    expect(Date.parse(st.deployedAt)).toBeGreaterThan(0);
    // The same definition saved again with its keys in another order is not a change.
    const reordered = JSON.parse(JSON.stringify(simple('return 2'), (_k, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v));
    expect(JSON.stringify(reordered)).not.toBe(JSON.stringify(simple('return 2')));
    expect((await t.call('PUT', `/api/v1/workflows/${id}`, { definition: reordered })).status).toBe(200);
    expect((await status()).needsRedeployment).toBe(false);
    const rb = await t.call('POST', `/api/v1/workflows/${id}/rollback`, {});
    expect(rb.body.data.version).toBe(1);
    // Rolled back to version 1: the draft (return 2) differs from it again.
    expect((await status()).needsRedeployment).toBe(true);
    const rb2 = await t.call('POST', `/api/v1/workflows/${id}/rollback`, { version: 2 });
    expect(rb2.body.data.version).toBe(2);
    expect((await t.call('POST', `/api/v1/workflows/${id}/rollback`, { version: 9 })).status).toBe(404);
    const un = await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
    expect(un.body.data).toMatchObject({ isDeployed: false, deployedAt: null });
    const again = await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('Workflow is not deployed');
    const audit = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=100`);
    const actions = audit.body.data.filter((e: { resourceId: string }) => e.resourceId === id).map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['workflow.created', 'workflow.deployed', 'workflow.rolled_back', 'workflow.undeployed']));
  });

  it('lists with cursor pagination', async () => {
    for (let i = 0; i < 5; i++) await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: `page-${i}`, definition: simple() });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const r = await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      for (const w of r.body.data) {
        expect(w.definition).toBeUndefined();
        seen.push(w.id);
      }
      cursor = r.body.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeGreaterThanOrEqual(5);
    expect((await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}&limit=0`)).status).toBe(400);
    expect((await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}&limit=101`)).status).toBe(400);
  });

  it("reads one workflow in both shapes: Weft's data.workflow, and the reference's fields with inputs, variables and limits", async () => {
    const definition = {
      variables: { region: 'eu' },
      blocks: [start([{ name: 'city', type: 'string', required: true }, { name: 'days', type: 'number', default: 3 }]), fn('f', 'return 1', 'F')],
      edges: [{ from: 'start', to: 'f' }],
    };
    const made = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'both-shapes', description: 'Weather', definition });
    const id: string = made.body.data.workflow.id;
    const r = await t.call('GET', `/api/v1/workflows/${id}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.workflow).toMatchObject({ id, name: 'both-shapes', description: 'Weather', definition: { variables: { region: 'eu' } } });
    expect(r.body.data).toMatchObject({ id, name: 'both-shapes', description: 'Weather', workspaceId: t.workspaceId, isDeployed: false, deployedAt: null, folderId: null });
    expect(r.body.data.definition).toBeUndefined();
    expect(r.body.data.variables).toEqual({ region: 'eu' });
    expect(r.body.data.inputs).toEqual([{ name: 'city', type: 'string', required: true }, { name: 'days', type: 'number', default: 3 }]);
    expect(r.body.limits.usage).toBeDefined();

    const deployed = await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    expect(deployed.body).toMatchObject({ success: true, data: { id, isDeployed: true, version: 1, warnings: [] }, limits: { usage: expect.any(Object) } });
    const undeployed = await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
    expect(undeployed.body).toMatchObject({ data: { id, isDeployed: false, deployedAt: null, warnings: [] }, limits: expect.any(Object) });
    const again = await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('Workflow is not deployed');

    // The reference's deploy body names the version; the versions list shows it. Bad labels write nothing.
    for (const bad of [{ name: '   ' }, { name: 'x'.repeat(101) }, { description: 'x'.repeat(50_001) }, { version: 3 }]) {
      const refused = await t.call('POST', `/api/v1/workflows/${id}/deploy`, bad);
      expect(refused.status, JSON.stringify(bad).slice(0, 40)).toBe(400);
    }
    const named = await t.call('POST', `/api/v1/workflows/${id}/deploy`, { name: '  Spring release ', description: 'Adds the days field' });
    expect(named.status, named.text).toBe(200);
    expect(named.body.data.version).toBe(2);
    const versions = await t.call('GET', `/api/v1/workflows/${id}/versions`);
    expect(versions.body.data.map((v: { version: number; name: string | null; description: string | null }) => [v.version, v.name, v.description]))
      .toEqual([[2, 'Spring release', 'Adds the days field'], [1, null, null]]);
  });

  it('lists only deployed workflows with deployedOnly, as the reference does; a folder holds none', async () => {
    const made = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'deployed-only-yes', definition: simple() });
    const id: string = made.body.data.workflow.id;
    expect((await t.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'deployed-only-no', definition: simple() });
    const all: { id: string; name: string; isDeployed: boolean }[] = [];
    const deployed: typeof all = [];
    for (const [flag, into] of [['false', all], ['true', deployed]] as const) {
      let cursor: string | undefined;
      do {
        const r = await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}&limit=100&deployedOnly=${flag}${cursor ? `&cursor=${cursor}` : ''}`);
        expect(r.status, r.text).toBe(200);
        into.push(...r.body.data);
        cursor = r.body.nextCursor;
      } while (cursor);
    }
    expect(deployed.map((w) => w.id)).toEqual(all.filter((w) => w.isDeployed).map((w) => w.id));
    expect(deployed.map((w) => w.name)).toContain('deployed-only-yes');
    expect(all.map((w) => w.name)).toContain('deployed-only-no');
    expect((await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}&deployedOnly=yes`)).status).toBe(400);
    const inFolder = await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}&folderId=folder-1`);
    expect(inFolder.status).toBe(200);
    expect(inFolder.body.data).toEqual([]);
  });

  it('hides other workspaces\' workflows (404) and checks bad input', async () => {
    const other = await createWorkspace(t.server.ctx.db, `wf-other-${Date.now()}`, t.userId, 'free');
    const key = await createKey(t.server.ctx.db, { workspaceId: other.id, userId: t.userId, type: 'workspace' });
    const c = await request(`${t.url}/api/v1/workflows`, 'POST', { workspaceId: other.id, name: 'theirs', definition: simple() }, { 'x-api-key': key.secret });
    expect(c.status).toBe(201);
    const id = c.body.data.workflow.id;
    for (const [m, p] of [['GET', `/api/v1/workflows/${id}`], ['PUT', `/api/v1/workflows/${id}`], ['DELETE', `/api/v1/workflows/${id}`], ['POST', `/api/v1/workflows/${id}/deploy`], ['GET', `/api/workflows/${id}/status`]] as const) {
      const r = await t.call(m, p, m === 'PUT' ? { definition: simple() } : undefined);
      expect(r.status, `${m} ${p}`).toBe(404);
      // The status route is Sim's flat body with a code, which its SDKs read.
      expect(r.body).toEqual(p.endsWith('/status') ? { error: 'Workflow not found', code: 'WORKFLOW_NOT_FOUND' } : { error: 'Workflow not found' });
    }
    expect((await t.call('POST', '/api/v1/workflows', { workspaceId: other.id, name: 'x', definition: simple() })).status).toBe(403);
    expect((await t.call('POST', '/api/v1/workflows', '[1,2]')).status).toBe(400);
    expect((await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 5, definition: simple() })).status).toBe(400);
    expect((await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'nodef' })).status).toBe(400);
    expect((await t.call('GET', '/api/v1/workflows/not-a-uuid')).status).toBe(404);
  });
});
