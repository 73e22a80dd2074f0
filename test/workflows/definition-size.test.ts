// A workflow definition is bounded by the JSON size of its text (WEFT_MAX_DEFINITION_BYTES, 2 MiB by
// default), below the 10 MiB body limit: over it create, update, deploy and a draft run answer 413 and
// write nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

const LIMIT = 4096;
let t: TestServer;
let small: TestServer;
beforeAll(async () => {
  [t, small] = await Promise.all([startTestServer(), startTestServer({ env: { WEFT_MAX_DEFINITION_BYTES: String(LIMIT) } })]);
});
afterAll(async () => {
  await Promise.all([t?.close(), small?.close()]);
});

/** A valid definition whose JSON text is `bytes` bytes of UTF-8, padded in its description with `pad` (1 or 2 bytes a character). */
function sized(bytes: number, pad = 'a', code = 'return 1') {
  const def = { variables: {}, blocks: [start(), fn('f', code, 'F')], edges: [{ from: 'start', to: 'f' }], description: '' };
  const room = bytes - Buffer.byteLength(JSON.stringify(def));
  const width = Buffer.byteLength(pad);
  def.description = pad.repeat(Math.floor(room / width)) + 'a'.repeat(room % width);
  expect(Buffer.byteLength(JSON.stringify(def))).toBe(bytes);
  return def;
}

const create = (s: TestServer, name: string, definition: unknown) =>
  s.call('POST', '/api/v1/workflows', { workspaceId: s.workspaceId, name, definition });
const names = async (s: TestServer): Promise<string[]> =>
  (await s.call('GET', `/api/v1/workflows?workspaceId=${s.workspaceId}&limit=100`)).body.data.map((w: { name: string }) => w.name);

describe('the definition size limit', () => {
  it('answers 413 to a create over the default 2 MiB, though the body is under the body limit, and stores nothing', async () => {
    const r = await create(t, 'too-big-default', sized(2 * 1024 * 1024 + 1));
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ error: 'Workflow definition exceeds the maximum allowed size of 2097152 bytes of JSON' });
    expect(await names(t)).not.toContain('too-big-default');
    expect((await create(t, 'at-default-limit', sized(2 * 1024 * 1024))).status).toBe(201);
  });

  it('takes the limit from WEFT_MAX_DEFINITION_BYTES, counting UTF-8 bytes of the JSON text', async () => {
    expect((await create(small, 'at-limit', sized(LIMIT))).status).toBe(201);
    const over = await create(small, 'over-limit', sized(LIMIT + 1));
    expect(over.status).toBe(413);
    expect(over.body.error).toBe(`Workflow definition exceeds the maximum allowed size of ${LIMIT} bytes of JSON`);
    // Two-byte characters: fewer characters than the limit, more bytes.
    const wide = sized(LIMIT + 2, 'é');
    expect(JSON.stringify(wide).length).toBeLessThan(LIMIT);
    expect((await create(small, 'over-limit-utf8', wide)).status).toBe(413);
    expect(await names(small)).toEqual(['at-limit']);
  });

  it('answers 413 to an update over the limit and leaves the workflow as it was', async () => {
    const c = await create(small, 'to-update', sized(1024, 'a', 'return 2'));
    expect(c.status).toBe(201);
    const id: string = c.body.data.workflow.id;
    const before = (await small.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow;
    const r = await small.call('PUT', `/api/v1/workflows/${id}`, { name: 'renamed', definition: sized(LIMIT + 1) });
    expect(r.status).toBe(413);
    expect(r.body.error).toMatch(/maximum allowed size of 4096 bytes/);
    const after = (await small.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow;
    expect(after).toEqual(before);
    expect(after.name).toBe('to-update');
  });

  it('answers 413 to a deploy and a draft run of a stored draft over the limit (saved under a larger one), writing nothing', async () => {
    const c = await create(small, 'stored-big', sized(1024));
    const id: string = c.body.data.workflow.id;
    // As if saved while the limit was larger: the draft in the database is over today's limit.
    await small.server.ctx.db.query('UPDATE workflows SET definition = $2 WHERE id = $1', [id, JSON.stringify(sized(LIMIT * 2))]);

    const deploy = await small.call('POST', `/api/v1/workflows/${id}/deploy`);
    expect(deploy.status).toBe(413);
    expect(deploy.body.error).toMatch(/maximum allowed size of 4096 bytes/);
    const draft = await request(`${small.url}/api/workflows/${id}/execute`, 'POST', { useDraftState: true, inputs: {} }, { 'x-api-key': small.apiKey });
    expect(draft.status).toBe(413);
    expect(draft.body.error).toMatch(/maximum allowed size of 4096 bytes/);

    const status = await small.call('GET', `/api/workflows/${id}/status`);
    expect(status.body).toMatchObject({ isDeployed: false, version: null });
    expect((await small.call('GET', `/api/v1/workflows/${id}/versions`)).body.data).toEqual([]);
    const snapshots = await small.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM workflow_versions WHERE workflow_id = $1', [id]);
    expect(snapshots[0].n).toBe(0);
    const logs = await small.call('GET', `/api/v1/logs?workspaceId=${small.workspaceId}&workflowId=${id}`);
    expect(logs.body.data).toEqual([]);
  });
});
