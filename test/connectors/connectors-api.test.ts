// Connectors through the HTTP API, on both databases: registering a local API's own OpenAPI document
// (pasted or by URL), the CRUD contract and its bad inputs, another workspace kept out, and a deployed
// workflow's connector block calling an operation with bearer auth from a secret that stays masked.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';
import { startUpstream, type Upstream } from './fixtures.js';

const TOKEN = `pet_${randomBytes(12).toString('hex')}`;

describe('connectors API', () => {
  let t: TestServer;
  let up: Upstream;
  let otherKey: string;
  let otherWorkspace: string;
  let connectorId: string;

  const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    t.call('POST', '/api/v1/connectors', { workspaceId: t.workspaceId, ...body }, headers);

  beforeAll(async () => {
    up = await startUpstream();
    // The upstream listens on loopback: outbound private addresses are allowed for this server.
    t = await startTestServer({ env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true' } });
    const db = t.server.ctx.db;
    otherWorkspace = (await createWorkspace(db, `connectors-other-${Date.now()}`, t.userId, 'enterprise')).id;
    otherKey = (await createKey(db, { workspaceId: otherWorkspace, userId: t.userId, type: 'workspace' })).secret;
    expect((await t.call('PUT', '/api/v1/secrets/PETS_TOKEN', { workspaceId: t.workspaceId, value: TOKEN })).status).toBe(201);
    const r = await create({ name: 'Pets', spec: up.document, auth: { type: 'bearer', secret: 'PETS_TOKEN' } });
    expect(r.status, r.text).toBe(201);
    connectorId = r.body.data.connector.id;
  });

  afterAll(async () => {
    await t?.close();
    await up?.close();
  });

  describe('registering a document', () => {
    it('answers 201 with the operations, their JSON Schemas and a generated id for an operation without one', async () => {
      const r = await t.call('GET', `/api/v1/connectors/${connectorId}`);
      expect(r.status).toBe(200);
      const c = r.body.data.connector;
      expect(c).toMatchObject({ id: connectorId, name: 'Pets', baseUrl: up.url, auth: { type: 'bearer', secret: 'PETS_TOKEN' } });
      expect(c.operations.map((o: any) => `${o.operationId} ${o.method} ${o.path}`).sort()).toEqual(['createPet POST /pets', 'getPet GET /pets/{petId}', 'get_pets GET /pets']);
      const getPet = c.operations.find((o: any) => o.operationId === 'getPet');
      expect(getPet).toMatchObject({
        summary: 'One pet', requestBody: null,
        parameters: { type: 'object', required: ['petId'], properties: { petId: { type: 'integer', minimum: 1 }, fields: { enum: ['all', 'short'] }, 'X-Trace': { type: 'string' } } },
      });
      // $refs are resolved in the stored schemas.
      const createPet = c.operations.find((o: any) => o.operationId === 'createPet');
      expect(createPet.requestBody).toMatchObject({ type: 'object', required: ['name'], properties: { name: { type: 'string' } } });
      const ops = await t.call('GET', `/api/v1/connectors/${connectorId}/operations`);
      expect(ops.body.data.operations).toHaveLength(3);
    });

    it('lists the connectors of the workspace', async () => {
      const r = await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}`);
      expect(r.status).toBe(200);
      expect(r.body.data.connectors.map((c: any) => c.id)).toContain(connectorId);
    });

    it('fetches a specUrl and lets baseUrl override the servers', async () => {
      const r = await create({ name: 'By URL', specUrl: `${up.url}/openapi.json`, baseUrl: `${up.url}/v2/` });
      expect(r.status, r.text).toBe(201);
      expect(r.body.data.connector.baseUrl).toBe(`${up.url}/v2`);
      expect(r.body.data.connector.operations).toHaveLength(3);
    });

    it('refuses a specUrl that does not answer 200 with JSON', async () => {
      const missing = await create({ name: 'x', specUrl: `${up.url}/nothing-here` });
      expect(missing.status).toBe(400);
      expect(missing.body.error).toContain('HTTP 404');
      const yaml = await create({ name: 'x', specUrl: `${up.url}/not-json` });
      expect(yaml.status).toBe(400);
      expect(yaml.body.error).toContain('not JSON');
      const ftp = await create({ name: 'x', specUrl: 'ftp://example.com/spec.json' });
      expect(ftp.status).toBe(400);
    });

    it('is a 400 naming where a document is invalid', async () => {
      const doc = structuredClone(up.document) as any;
      doc.paths['/pets/{petId}'].get.parameters[1].in = 'nowhere';
      const r = await create({ name: 'bad', spec: doc });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatch(/^Invalid OpenAPI document: /);
      expect(r.body.error).toContain('"in": "nowhere"');
      expect(r.body.details.length).toBeGreaterThan(0);

      const noVersion = await create({ name: 'bad', spec: { openapi: '3.0.3', info: { title: 'x' }, paths: {} } });
      expect(noVersion.status).toBe(400);
      expect(noVersion.body.error).toContain('version');

      const dangling = structuredClone(up.document) as any;
      dangling.paths['/pets'].post.requestBody.content['application/json'].schema = { $ref: '#/components/schemas/Nope' };
      const missingRef = await create({ name: 'bad', spec: dangling });
      expect(missingRef.status).toBe(400);
      expect(missingRef.body.error).toContain('#/components/schemas/Nope');
    });

    it('refuses a small document whose $refs expand past the bound, and stores nothing', async () => {
      // Eight schemas, each referring eight times to the next: 3 KB that stand for 8^7 objects once resolved.
      const schemas: Record<string, unknown> = {};
      for (let i = 0; i < 8; i++) {
        const properties = Object.fromEntries(Array.from({ length: 8 }, (_, j) => [`p${j}`, i < 7 ? { $ref: `#/components/schemas/S${i + 1}` } : { type: 'string' }]));
        schemas[`S${i}`] = { type: 'object', properties };
      }
      const doc = structuredClone(up.document) as any;
      doc.components.schemas = { ...doc.components.schemas, ...schemas };
      doc.paths['/pets'].post.requestBody.content['application/json'].schema = { $ref: '#/components/schemas/S0' };
      const r = await create({ name: 'laughs', spec: doc });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatch(/^Invalid OpenAPI document: with its \$refs resolved it exceeds 8 MB as JSON/);
      const list = await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}`);
      expect(list.body.data.connectors.map((c: { name: string }) => c.name)).not.toContain('laughs');

      // The same shape three levels deep (512 strings) is an ordinary document. The parser resolves the
      // components too, so the deeper schemas go.
      const shallow = structuredClone(doc);
      for (let i = 0; i < 5; i++) delete shallow.components.schemas[`S${i}`];
      shallow.paths['/pets'].post.requestBody.content['application/json'].schema = { $ref: '#/components/schemas/S5' };
      const ok = await create({ name: 'shallow laughs', spec: shallow });
      expect(ok.status, ok.text).toBe(201);
      expect((await t.call('DELETE', `/api/v1/connectors/${ok.body.data.connector.id}`)).status).toBe(200);
    });

    it('refuses Swagger 2.0 and documents that are not objects', async () => {
      const swagger = await create({ name: 'old', spec: { swagger: '2.0', info: { title: 'x', version: '1' }, paths: {} } });
      expect(swagger.status).toBe(400);
      expect(swagger.body.error).toContain('OpenAPI 3.0 and 3.1');
      const notObject = await create({ name: 'x', spec: ['openapi'] });
      expect(notObject.status).toBe(400);
    });

    it('refuses external $refs (another host or a file) before anything is fetched', async () => {
      const before = up.received.length;
      for (const ref of [`${up.url}/openapi.json#/components/schemas/NewPet`, 'file:///etc/passwd', './schemas.json']) {
        const doc = structuredClone(up.document) as any;
        doc.paths['/pets'].post.requestBody.content['application/json'].schema = { $ref: ref };
        const r = await create({ name: 'ext', spec: doc });
        expect(r.status).toBe(400);
        expect(r.body.error).toContain('external $ref');
        expect(r.body.details[0].path).toBe('#/paths/~1pets/post/requestBody/content/application~1json/schema/$ref');
      }
      expect(up.received.length).toBe(before);
    });

    it('needs a base URL when the document has no absolute server', async () => {
      const doc = structuredClone(up.document) as any;
      doc.servers = [{ url: '/api' }];
      const r = await create({ name: 'relative', spec: doc });
      expect(r.status).toBe(400);
      expect(r.body.error).toContain('baseUrl');
      expect((await create({ name: 'relative', spec: doc, baseUrl: 'not a url' })).status).toBe(400);
      expect((await create({ name: 'relative', spec: doc, baseUrl: up.url })).status).toBe(201);
    });

    it('refuses bad bodies: both or neither of spec and specUrl, unknown secrets, missing names', async () => {
      const both = await create({ name: 'x', spec: up.document, specUrl: `${up.url}/openapi.json` });
      expect(both.status).toBe(400);
      expect((await create({ name: 'x' })).status).toBe(400);
      const secret = await create({ name: 'x', spec: up.document, auth: { type: 'bearer', secret: 'NO_SUCH' } });
      expect(secret.status).toBe(400);
      expect(secret.body.error).toContain('NO_SUCH');
      const header = await create({ name: 'x', spec: up.document, auth: { type: 'header', secret: 'PETS_TOKEN' } });
      expect(header.status).toBe(400);
      expect(header.body.error).toContain('auth.name');
      expect((await create({ name: 'x', spec: up.document, auth: { type: 'bearer', secret: 'lower' } })).status).toBe(400);
      expect((await create({ name: 'x', spec: up.document, auth: { type: 'oauth', secret: 'PETS_TOKEN' } })).status).toBe(400);
      expect((await create({ spec: up.document })).status).toBe(400);
      expect((await create({ name: '', spec: up.document })).status).toBe(400);
      expect((await create({ name: 'x', spec: up.document, extra: 1 })).status).toBe(400);
      const malformed = await t.call('POST', '/api/v1/connectors', '{"workspaceId": ', { 'content-type': 'application/json' });
      expect(malformed.status).toBe(400);
    });

    it('replaces and deletes a connector', async () => {
      const made = await create({ name: 'Temp', spec: up.document });
      const id = made.body.data.connector.id;
      const doc = structuredClone(up.document) as any;
      delete doc.paths['/pets'];
      const put = await t.call('PUT', `/api/v1/connectors/${id}`, { name: 'Temp 2', spec: doc, auth: { type: 'header', secret: 'PETS_TOKEN', name: 'X-Api-Key' } });
      expect(put.status, put.text).toBe(200);
      expect(put.body.data.connector).toMatchObject({ name: 'Temp 2', auth: { type: 'header', name: 'X-Api-Key' } });
      expect(put.body.data.connector.operations.map((o: any) => o.operationId)).toEqual(['getPet']);
      expect((await t.call('DELETE', `/api/v1/connectors/${id}`)).status).toBe(200);
      expect((await t.call('GET', `/api/v1/connectors/${id}`)).status).toBe(404);
      expect((await t.call('DELETE', `/api/v1/connectors/${id}`)).status).toBe(404);
    });
  });

  describe('another workspace', () => {
    it('gets 404 for the connector on every route, and cannot list this workspace', async () => {
      const as = { 'x-api-key': otherKey };
      expect((await t.call('GET', `/api/v1/connectors/${connectorId}`, undefined, as)).status).toBe(404);
      expect((await t.call('GET', `/api/v1/connectors/${connectorId}/operations`, undefined, as)).status).toBe(404);
      expect((await t.call('PUT', `/api/v1/connectors/${connectorId}`, { name: 'mine', spec: up.document }, as)).status).toBe(404);
      expect((await t.call('DELETE', `/api/v1/connectors/${connectorId}`, undefined, as)).status).toBe(404);
      expect((await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}`, undefined, as)).status).toBe(404);
      expect((await t.call('GET', `/api/v1/connectors/${connectorId}`)).status).toBe(200);
    });

    it('cannot save a workflow that calls it', async () => {
      const r = await t.call('POST', '/api/v1/workflows', {
        workspaceId: otherWorkspace, name: 'steal',
        definition: { blocks: [start(), { id: 'c', type: 'connector', name: 'C', config: { connectorId, operationId: 'getPet', parameters: { petId: 1 } } }], edges: [{ from: 'start', to: 'c' }] },
      }, { 'x-api-key': otherKey });
      expect(r.status).toBe(400);
      expect(r.body.error).toContain(`unknown connector ${connectorId}`);
    });

    it('answers 404 for ids that are not ids', async () => {
      expect((await t.call('GET', '/api/v1/connectors/not-a-uuid')).status).toBe(404);
      expect((await t.call('GET', '/api/v1/connectors/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    });
  });

  describe('the connector block', () => {
    const block = (config: Record<string, unknown>) => ({ id: 'call', type: 'connector', name: 'Call', config: { connectorId, ...config } });
    const flow = (config: Record<string, unknown>, fields: { name: string; type: string }[] = []) => ({
      blocks: [start(fields), block(config)], edges: [{ from: 'start', to: 'call' }],
    });

    it('calls an operation: the server receives the parameters, the body and the bearer secret; the trace and logs show ***', async () => {
      const id = await deploy(t, 'create-pet', flow({
        operationId: 'createPet', parameters: { 'X-Trace': 'trace-<start.n>', dryRun: 'false' }, body: { name: '<start.name>', age: 3 },
      }, [{ name: 'name', type: 'string' }, { name: 'n', type: 'string' }]));
      const before = up.received.length;
      const r = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: { name: 'Bo', n: '42' } });
      expect(r.status, r.text).toBe(200);
      expect(r.body.success).toBe(true);
      expect(r.body.output).toMatchObject({ status: 201, data: { id: 7, name: 'Bo', age: 3 } });
      expect(r.body.output.headers['content-type']).toContain('application/json');
      const got = up.received.slice(before);
      expect(got).toHaveLength(1);
      expect(got[0]).toMatchObject({ method: 'POST', path: '/pets', query: { dryRun: 'false' }, body: { name: 'Bo', age: 3 } });
      expect(got[0].headers.authorization).toBe(`Bearer ${TOKEN}`);
      expect(got[0].headers['x-trace']).toBe('trace-42');

      const getId = await deploy(t, 'get-pet', flow({ operationId: 'getPet', parameters: { petId: '<start.id>', fields: 'short' } }, [{ name: 'id', type: 'string' }]));
      const g = await t.call('POST', `/api/workflows/${getId}/execute`, { inputs: { id: '12' } });
      expect(g.body.output.data).toEqual({ id: 12, name: 'Rex', fields: 'short', sawAuth: 'Bearer ***' });
      expect(up.received.at(-1)).toMatchObject({ path: '/pets/12', query: { fields: 'short' } });

      const logs = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&details=full&limit=100`);
      expect(logs.status).toBe(200);
      const texts = [r.text, g.text, logs.text];
      for (const entry of logs.body.data) texts.push((await t.call('GET', `/api/v1/logs/${entry.id}`)).text);
      const traced = (await t.call('GET', `/api/v1/logs/${logs.body.data[0].id}`)).body.data.trace;
      expect(traced.find((b: any) => b.blockId === 'call').output.data.sawAuth).toBe('Bearer ***');
      for (const text of texts) expect(text.includes(TOKEN.slice(4, 16))).toBe(false);
      expect(texts.join('\n')).toContain('Bearer ***');
    });

    it('fails the run naming the parameter when parameters or the body do not match the schemas', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ operationId: 'getPet', parameters: { petId: 0 } }, 'parameter "petId" (path) must be >= 1'],
        [{ operationId: 'getPet', parameters: { petId: 'abc' } }, 'parameter "petId" (path) must be integer'],
        [{ operationId: 'getPet', parameters: { fields: 'all' } }, 'parameter "petId" (path) is required'],
        [{ operationId: 'getPet', parameters: { petId: 1, fields: 'long' } }, 'parameter "fields" (query) must be one of ["all","short"]'],
        [{ operationId: 'getPet', parameters: { petId: 1, color: 'red' } }, 'unknown parameter "color"'],
        [{ operationId: 'createPet', body: { name: 'x', age: -1 } }, 'body field /age must be >= 0'],
        [{ operationId: 'createPet', body: { tag: 'x' } }, "body must have required property 'name'"],
        [{ operationId: 'createPet' }, 'a request body is required by createPet'],
      ];
      const before = up.received.length;
      for (const [config, message] of cases) {
        const id = await deploy(t, `bad-${randomBytes(3).toString('hex')}`, flow(config));
        const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
        expect(r.body.success, JSON.stringify(config)).toBe(false);
        expect(r.body.error).toContain(message);
        expect(r.body.error).toContain('Call');
      }
      expect(up.received.length).toBe(before);
    });

    it('fails the run on an error status from the API', async () => {
      const id = await deploy(t, 'missing-pet', flow({ operationId: 'getPet', parameters: { petId: 404 } }));
      const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
      expect(r.body.success).toBe(false);
      expect(r.body.error).toContain('HTTP 404 from getPet');
    });

    it('refuses at save a definition naming an unknown connector or operation; references are checked at run time', async () => {
      const unknownConnector = await t.call('POST', '/api/v1/workflows', {
        workspaceId: t.workspaceId, name: 'u1', definition: { blocks: [start(), { id: 'call', type: 'connector', name: 'Call', config: { connectorId: '00000000-0000-4000-8000-000000000000', operationId: 'getPet' } }], edges: [{ from: 'start', to: 'call' }] },
      });
      expect(unknownConnector.status).toBe(400);
      expect(unknownConnector.body.error).toContain('unknown connector');
      expect(unknownConnector.body.details[0]).toMatchObject({ blockId: 'call', field: 'connectorId' });
      const unknownOp = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'u2', definition: flow({ operationId: 'deletePet' }) });
      expect(unknownOp.status).toBe(400);
      expect(unknownOp.body.error).toContain('has no operation "deletePet"');
      const missingField = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'u3', definition: flow({}) });
      expect(missingField.status).toBe(400);

      const id = await deploy(t, 'by-reference', flow({ operationId: '<start.op>', parameters: { petId: 3 } }, [{ name: 'op', type: 'string' }]));
      const bad = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: { op: 'nope' } });
      expect(bad.body.success).toBe(false);
      expect(bad.body.error).toContain('has no operation "nope"');
      const good = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: { op: 'getPet' } });
      expect(good.body.output.data.id).toBe(3);
    });
  });
});

describe('connectors without private network access', () => {
  let t: TestServer;
  let up: Upstream;
  beforeAll(async () => {
    up = await startUpstream();
    t = await startTestServer();
  });
  afterAll(async () => {
    await t?.close();
    await up?.close();
  });

  it('refuses a specUrl and calls to a private address through the outbound guard', async () => {
    const before = up.received.length;
    const byUrl = await t.call('POST', '/api/v1/connectors', { workspaceId: t.workspaceId, name: 'x', specUrl: `${up.url}/openapi.json` });
    expect(byUrl.status).toBe(400);
    expect(byUrl.body.error).toContain('refused');
    const pasted = await t.call('POST', '/api/v1/connectors', { workspaceId: t.workspaceId, name: 'x', spec: up.document });
    expect(pasted.status).toBe(201);
    const id = await deploy(t, 'private', {
      blocks: [start(), { id: 'call', type: 'connector', name: 'Call', config: { connectorId: pasted.body.data.connector.id, operationId: 'getPet', parameters: { petId: 1 } } }],
      edges: [{ from: 'start', to: 'call' }],
    });
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.body.success).toBe(false);
    expect(r.body.error).toContain('refused');
    expect(up.received.length).toBe(before);
  });
});
