// Workspace secrets through the HTTP API, on both databases: the CRUD contract and its bad inputs,
// references resolved when a block runs (the recording server receives the value) and masked in
// everything the service reports, another workspace kept out, deletion, rotation, and (embedded) the
// data directory holding no plaintext.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser, createWorkspace } from '../support/accounts.js';
import { dbMode, request, startTestServer, type TestServer } from '../support/harness.js';
import { fn, start, waitForJob } from '../support/workflows.js';
import { startServer as startRecorder, type TestServer as Recorder } from '../engine/helpers.js';
import { MAX_SECRETS } from '../../src/secrets/service.js';

const VALUE = `tok_${randomBytes(12).toString('hex')}`;
/** Pieces of the value that must not appear either (8 characters or more). */
const PIECES = [VALUE, VALUE.slice(4, 12), VALUE.slice(-9)];

function expectNoValue(text: string, where: string) {
  for (const piece of PIECES) expect(text.includes(piece), `${where} contains ${piece}`).toBe(false);
}

describe('workspace secrets', () => {
  let t: TestServer;
  let recorder: Recorder;
  let dataDir: string;
  let otherKey: string;
  let otherWorkspace: string;
  let readerKey: string;
  const seen: string[] = [];
  const put = (name: string, body: unknown, key?: string) =>
    t.call('PUT', `/api/v1/secrets/${name}`, body, key ? { 'x-api-key': key } : {});

  const deployAs = async (key: string, workspaceId: string, name: string, definition: unknown) => {
    const created = await t.call('POST', '/api/v1/workflows', { workspaceId, name, definition }, { 'x-api-key': key });
    if (created.status !== 201) return { created };
    const id: string = created.body.data.workflow.id;
    const deployed = await t.call('POST', `/api/v1/workflows/${id}/deploy`, undefined, { 'x-api-key': key });
    expect(deployed.status).toBe(200);
    return { created, id };
  };

  beforeAll(async () => {
    recorder = await startRecorder({
      '/hook': (req, _body, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ youSent: req.headers.authorization }));
      },
    });
    t = await startTestServer({ env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true' } });
    dataDir = t.config.dataDir;
    const db = t.server.ctx.db;
    otherWorkspace = (await createWorkspace(db, `secrets-other-${Date.now()}`, t.userId, 'enterprise')).id;
    otherKey = (await createKey(db, { workspaceId: otherWorkspace, userId: t.userId, type: 'workspace' })).secret;
    const reader = await createUser(db, `reader-${Date.now()}@example.com`);
    await addMember(db, t.workspaceId, reader.id, 'read');
    readerKey = (await createKey(db, { workspaceId: t.workspaceId, userId: reader.id, type: 'personal' })).secret;
  });

  afterAll(async () => {
    await t?.close();
    await recorder?.close();
  });

  it('creates (201), replaces (200), lists names and dates but never a value, and deletes (404 when absent)', async () => {
    const created = await put('API_TOKEN', { workspaceId: t.workspaceId, value: 'first-value-123' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ success: true, data: { name: 'API_TOKEN', created: true } });
    const replaced = await put('API_TOKEN', { workspaceId: t.workspaceId, value: VALUE });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.created).toBe(false);
    expect((await put('SPARE_1', { workspaceId: t.workspaceId, value: 'x'.repeat(64 * 1024) })).status).toBe(201);

    const list = await t.call('GET', `/api/v1/secrets?workspaceId=${t.workspaceId}`);
    expect(list.status).toBe(200);
    expect(list.body.data.secrets.map((s: any) => s.name)).toEqual(['API_TOKEN', 'SPARE_1']);
    expect(Object.keys(list.body.data.secrets[0]).sort()).toEqual(['createdAt', 'lastUsedAt', 'name', 'updatedAt']);
    expect(list.body.data.secrets[0].lastUsedAt).toBeNull();
    expectNoValue(list.text, 'the list');
    expect(list.text).not.toContain('first-value-123');

    const gone = await t.call('DELETE', `/api/v1/secrets/SPARE_1?workspaceId=${t.workspaceId}`);
    expect(gone.status).toBe(200);
    expect(gone.body.data).toEqual({ name: 'SPARE_1', deleted: true, usedBy: [] });
    expect((await t.call('DELETE', `/api/v1/secrets/SPARE_1?workspaceId=${t.workspaceId}`)).status).toBe(404);
    expect((await t.call('DELETE', `/api/v1/secrets/not_a_name?workspaceId=${t.workspaceId}`)).status).toBe(404);
  });

  it('refuses bad names (naming the rule), bad values (400; 413 past 64 KiB), bad bodies, and writes nothing', async () => {
    for (const name of ['lower', '1ABC', 'A-B', `A${'B'.repeat(64)}`]) {
      const r = await put(name, { workspaceId: t.workspaceId, value: 'v' });
      expect(r.status, name).toBe(400);
      expect(r.body.error).toContain('^[A-Z][A-Z0-9_]{0,63}$');
    }
    expect((await put('OK_NAME', { workspaceId: t.workspaceId, value: '' })).status).toBe(400);
    expect((await put('OK_NAME', { workspaceId: t.workspaceId, value: 42 })).status).toBe(400);
    expect((await put('OK_NAME', { workspaceId: t.workspaceId })).status).toBe(400);
    expect((await put('OK_NAME', { value: 'v' })).status).toBe(400);
    expect((await put('OK_NAME', '{"workspaceId": ')).status).toBe(400);
    const big = await put('OK_NAME', { workspaceId: t.workspaceId, value: 'é'.repeat(32 * 1024 + 1) });
    expect(big.status).toBe(413);
    expect(big.body.error).toContain('65536 bytes');
    expect((await put('OK_NAME', { workspaceId: '00000000-0000-4000-8000-000000000000', value: 'v' })).status).toBe(404);
    expect((await put('OK_NAME', { workspaceId: 'nope', value: 'v' })).status).toBe(404);
    expect((await t.call('GET', '/api/v1/secrets')).status).toBe(400);
    const list = await t.call('GET', `/api/v1/secrets?workspaceId=${t.workspaceId}`);
    expect(list.body.data.secrets.map((s: any) => s.name)).toEqual(['API_TOKEN']);
  });

  it(`holds at most ${MAX_SECRETS} secrets a workspace, also when creates race: one more is a 400 naming the limit, a replacement still passes`, async () => {
    const db = t.server.ctx.db;
    const ws = (await createWorkspace(db, `secrets-full-${Date.now()}`, t.userId, 'enterprise')).id;
    const key = (await createKey(db, { workspaceId: ws, userId: t.userId, type: 'workspace' })).secret;
    // Filled through the service (the HTTP path is the same call), all but the last two over HTTP.
    for (let i = 1; i <= MAX_SECRETS - 2; i++) await t.server.services.secrets.set(ws, `FILL_${i}`, 'v', { userId: t.userId });
    // Four new names at once for the last two places: on PostgreSQL each create counts in its own transaction,
    // so without the workspace's lock all four could see 998 and the workspace would end at 1,002.
    const racing = await Promise.all([1, 2, 3, 4].map((i) => put(`LAST_${i}`, { workspaceId: ws, value: 'v' }, key)));
    expect(racing.map((r) => r.status).sort()).toEqual([201, 201, 400, 400]);
    const over = await put('ONE_TOO_MANY', { workspaceId: ws, value: 'v' }, key);
    expect(over.status, over.text).toBe(400);
    expect(over.body.error).toContain(`at most ${MAX_SECRETS} secrets`);
    expect((await put('FILL_1', { workspaceId: ws, value: 'replaced' }, key)).status).toBe(200);
    const list = await t.call('GET', `/api/v1/secrets?workspaceId=${ws}`, undefined, { 'x-api-key': key });
    expect(list.body.data.secrets).toHaveLength(MAX_SECRETS);
    expect(list.body.data.secrets.map((x: { name: string }) => x.name)).not.toContain('ONE_TOO_MANY');
  }, 60_000);

  it('needs the write role to write; a read member lists', async () => {
    expect((await put('READER', { workspaceId: t.workspaceId, value: 'v' }, readerKey)).status).toBe(403);
    expect((await t.call('DELETE', `/api/v1/secrets/API_TOKEN?workspaceId=${t.workspaceId}`, undefined, { 'x-api-key': readerKey })).status).toBe(403);
    expect((await t.call('GET', `/api/v1/secrets?workspaceId=${t.workspaceId}`, undefined, { 'x-api-key': readerKey })).status).toBe(200);
  });

  it('another workspace\'s key gets 404 on every route, and cannot reference the secret', async () => {
    const h = { 'x-api-key': otherKey };
    expect((await put('API_TOKEN', { workspaceId: t.workspaceId, value: 'stolen' }, otherKey)).status).toBe(404);
    expect((await t.call('GET', `/api/v1/secrets?workspaceId=${t.workspaceId}`, undefined, h)).status).toBe(404);
    expect((await t.call('DELETE', `/api/v1/secrets/API_TOKEN?workspaceId=${t.workspaceId}`, undefined, h)).status).toBe(404);
    const refused = await deployAs(otherKey, otherWorkspace, 'steal', {
      blocks: [start(), fn('f', 'return {{API_TOKEN}}')], edges: [{ from: 'start', to: 'f' }],
    });
    expect(refused.created.status).toBe(400);
    expect(refused.created.body.error).toContain('unknown secret {{API_TOKEN}}');
  });

  it('refuses a definition with an unknown secret at save, naming the block, the field and the name', async () => {
    const r = await t.call('POST', '/api/v1/workflows', {
      workspaceId: t.workspaceId, name: 'typo',
      definition: { blocks: [start(), { id: 'call', type: 'http', name: 'Call', config: { url: 'http://example.com', headers: { Authorization: 'Bearer {{API_TOKNE}}' } } }], edges: [{ from: 'start', to: 'call' }] },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('Invalid workflow definition: Block "Call" (call): unknown secret {{API_TOKNE}} in config.headers.Authorization (no secret named API_TOKNE in this workspace; set it with PUT /api/v1/secrets/API_TOKNE)');
    expect(r.body.details[0]).toMatchObject({ blockId: 'call', field: 'config.headers.Authorization' });
    expect((await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`)).body.data.workflows ?? []).toEqual([]);
  });

  describe('a deployed workflow that uses the secret', () => {
    let sendsId: string;
    let throwsId: string;

    beforeAll(async () => {
      sendsId = (await deployAs(t.apiKey, t.workspaceId, 'sends-token', {
        blocks: [
          start(),
          { id: 'call', type: 'http', name: 'Call', config: { url: `${recorder.url}/hook`, headers: { Authorization: 'Bearer {{API_TOKEN}}' } } },
          fn('ret', 'console.log("using", {{API_TOKEN}}); return { echoed: <call.data.youSent>, token: {{API_TOKEN}}, piece: {{API_TOKEN}}.slice(3, 15) }', 'Ret'),
        ],
        edges: [{ from: 'start', to: 'call' }, { from: 'call', to: 'ret' }],
      })).id!;
      throwsId = (await deployAs(t.apiKey, t.workspaceId, 'throws-token', {
        blocks: [start(), fn('boom', 'throw new Error("rejected " + {{API_TOKEN}})', 'Boom')],
        edges: [{ from: 'start', to: 'boom' }],
      })).id!;
    });

    it('sends the real value in the HTTP request and masks it in the answer, trace, logs, stored output and audit log', async () => {
      const before = recorder.requests.length;
      const sync = await t.call('POST', `/api/workflows/${sendsId}/execute`, {});
      expect(sync.status).toBe(200);
      expect(recorder.requests.slice(before).map((r) => r.headers.authorization)).toEqual([`Bearer ${VALUE}`]);
      expect(sync.body.output).toEqual({ echoed: 'Bearer ***', token: '***', piece: '***' });
      seen.push(sync.text);

      const queued = await t.call('POST', `/api/workflows/${sendsId}/execute`, { async: true });
      expect(queued.status).toBe(202);
      const job = await waitForJob(t, queued.body.jobId);
      expect(job.status).toBe('completed');
      expect(recorder.requests.at(-1)?.headers.authorization).toBe(`Bearer ${VALUE}`);
      seen.push(JSON.stringify(job));

      const thrown = await t.call('POST', `/api/workflows/${throwsId}/execute`, {});
      expect(thrown.body.success).toBe(false);
      expect(thrown.body.error).toContain('rejected ***');
      seen.push(thrown.text);

      const logs = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&details=full&limit=100`);
      expect(logs.status).toBe(200);
      seen.push(logs.text);
      for (const entry of logs.body.data) {
        const one = await t.call('GET', `/api/v1/logs/${entry.id}`);
        expect(one.status).toBe(200);
        seen.push(one.text);
      }
      const traced = logs.body.data.map((e: any) => e.id);
      const full = await t.call('GET', `/api/v1/logs/${traced[traced.length - 1]}`);
      expect(full.body.data.trace.find((b: any) => b.blockId === 'call').input.headers.Authorization).toBe('Bearer ***');
      expect(full.body.data.trace.find((b: any) => b.blockId === 'ret').logs[0].message).toContain('***');
      seen.push((await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=100`)).text);
      seen.push((await request(`${t.url}/metrics`, 'GET')).text);
      for (const [i, text] of seen.entries()) expectNoValue(text, `answer ${i}`);

      const audit = (await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=100`)).body.data
        .filter((e: any) => e.resourceType === 'secret').map((e: any) => `${e.action} ${e.resourceName}`);
      expect(audit).toEqual(expect.arrayContaining(['secret.created API_TOKEN', 'secret.replaced API_TOKEN', 'secret.deleted SPARE_1']));
      const listed = (await t.call('GET', `/api/v1/secrets?workspaceId=${t.workspaceId}`)).body.data.secrets;
      expect(listed[0].lastUsedAt).not.toBeNull();
    });

    it('masks a value the URL parser lower-cased: a secret in an HTTP block\'s host, named by the request\'s error', async () => {
      const mixed = `Host${randomBytes(8).toString('hex').toUpperCase()}Part`;
      expect((await put('HOST_PART', { workspaceId: t.workspaceId, value: mixed })).status).toBe(201);
      const { id } = await deployAs(t.apiKey, t.workspaceId, 'host-secret', {
        blocks: [start(), { id: 'call', type: 'http', name: 'Call', config: { url: 'http://{{HOST_PART}}.invalid/x' } }],
        edges: [{ from: 'start', to: 'call' }],
      });
      const r = await t.call('POST', `/api/workflows/${id!}/execute`, {});
      expect(r.body.success).toBe(false);
      expect(r.body.error).toContain('***.invalid');
      const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
      for (const text of [r.text, log.text]) {
        expect(text.toLowerCase()).not.toContain(mixed.toLowerCase().slice(0, 12));
      }
    });

    it('keeps every secret readable by runs after the key is rotated', async () => {
      const keyIds = async () => (await t.server.ctx.db.query<{ key_id: string }>('SELECT key_id FROM secrets')).map((r) => r.key_id);
      const before = await keyIds();
      const rotated = await t.server.services.secrets.rotateKey();
      expect(rotated.rotated).toBeGreaterThanOrEqual(1);
      const after = await keyIds();
      if (rotated.source === 'file') {
        expect(after.every((id) => id === rotated.keyId && !before.includes(id))).toBe(true);
        const file = fs.readFileSync(path.join(dataDir, 'secrets.key'), 'utf8').trim().split('\n');
        expect(file).toHaveLength(1);
        expect(fs.statSync(path.join(dataDir, 'secrets.key')).mode & 0o777).toBe(0o600);
      }
      const run = await t.call('POST', `/api/workflows/${sendsId}/execute`, {});
      expect(run.body.success).toBe(true);
      expect(recorder.requests.at(-1)?.headers.authorization).toBe(`Bearer ${VALUE}`);
    });

    it('deleting a secret a deployed workflow uses answers with that workflow; its runs then fail naming the secret', async () => {
      const h = { 'x-api-key': otherKey };
      expect((await t.call('PUT', '/api/v1/secrets/OTHER_TOKEN', { workspaceId: otherWorkspace, value: 'other-workspace-value' }, h)).status).toBe(201);
      const { id } = await deployAs(otherKey, otherWorkspace, 'other-uses', {
        blocks: [start(), fn('f', 'return {{OTHER_TOKEN}}.length')], edges: [{ from: 'start', to: 'f' }],
      });
      expect((await t.call('POST', `/api/workflows/${id}/execute`, {}, h)).body.output).toBe(21);
      const deleted = await t.call('DELETE', `/api/v1/secrets/OTHER_TOKEN?workspaceId=${otherWorkspace}`, undefined, h);
      expect(deleted.status).toBe(200);
      expect(deleted.body.data.usedBy).toEqual([{ id, name: 'other-uses' }]);
      const failed = await t.call('POST', `/api/workflows/${id}/execute`, {}, h);
      expect(failed.body.success).toBe(false);
      expect(failed.body.error).toContain('Secret {{OTHER_TOKEN}} is not set in this workspace');
      // The first workspace's secrets are untouched.
      expect((await t.call('POST', `/api/workflows/${sendsId}/execute`, {})).body.success).toBe(true);
    });
  });

  it.runIf(dbMode() === 'pglite')('leaves no plaintext in the embedded data directory\'s files', async () => {
    await t.close();
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile()) files.push(p);
      }
    };
    walk(dataDir);
    const hits = (needle: string) => files.filter((f) => fs.readFileSync(f).includes(Buffer.from(needle)));
    // The search finds what is stored in the clear (the secret's name, the workflow names) ...
    expect(hits('sends-token').length).toBeGreaterThan(0);
    // ... and none of the value.
    for (const piece of PIECES) expect(hits(piece), piece).toEqual([]);
  });
});
