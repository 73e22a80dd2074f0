// What a connector stores, and what listing them answers (docs/architecture.md, Where limits are enforced). A
// 100 KB document whose 480 operations share one large schema by $ref is stored as about 7 MB of resolved
// operations: before, none of it counted toward the workspace's storage (500 connectors, 3.7 GB), and the list
// answered every connector of the workspace with its operations in one body (74 MB for ten such connectors).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { MAX_CONNECTORS } from '../../src/connectors/service.js';
import { insertConnector } from '../../src/connectors/store.js';
import { asNewWorkspace, startTestServer, type TestServer } from '../support/harness.js';

/** The free plan stores this many bytes here. */
const FREE_BYTES = 2_000_000;

/** A document of about 100 KB whose operations resolve to about 7 MB (each repeats the shared schema). */
function amplifyingDocument(): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 120; i++) properties[`field_${i}_${'x'.repeat(40)}`] = { type: 'string', description: 'd'.repeat(40) };
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < 480; i++) {
    paths[`/op${i}`] = { post: { operationId: `op${i}`, requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Big' } } } }, responses: { 200: { description: 'ok' } } } };
  }
  return { openapi: '3.0.3', info: { title: 'big', version: '1' }, servers: [{ url: 'https://api.example.com' }], paths, components: { schemas: { Big: { type: 'object', properties } } } };
}

const smallDocument = {
  openapi: '3.0.3', info: { title: 'small', version: '1' }, servers: [{ url: 'https://api.example.com' }],
  paths: { '/ping': { get: { operationId: 'ping', responses: { 200: { description: 'ok' } } } } },
};

let t: TestServer;
let free: TestServer;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_PLAN_LIMITS: JSON.stringify({ free: { storageBytes: FREE_BYTES, apiPerMinute: 100_000 } }) } });
  free = await asNewWorkspace(t, 'free', 'connectors-free');
});
afterAll(async () => {
  await t?.close();
});

const storedBytes = async (s: TestServer): Promise<number> => {
  const r = await s.call('GET', '/api/users/me/usage-limits');
  expect(r.status, r.text).toBe(200);
  return r.body.storage.usedBytes as number;
};

describe("a connector's size", () => {
  it("counts its document and resolved operations toward the workspace's storage, and is refused past the plan's", async () => {
    const before = await storedBytes(free);
    const small = await free.call('POST', '/api/v1/connectors', { workspaceId: free.workspaceId, name: 'Small', spec: smallDocument });
    expect(small.status, small.text).toBe(201);
    const grew = (await storedBytes(free)) - before;
    expect(grew).toBeGreaterThan(JSON.stringify(smallDocument).length);
    expect(grew).toBeLessThan(5_000);

    // About 7 MB resolved from a 100 KB document: past the free plan's 2 MB, refused, and nothing stored.
    const big = await free.call('POST', '/api/v1/connectors', { workspaceId: free.workspaceId, name: 'Big', spec: amplifyingDocument() });
    expect(big.status, big.text).toBe(403);
    expect(big.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
    const replaced = await free.call('PUT', `/api/v1/connectors/${small.body.data.connector.id}`, { name: 'Small', spec: amplifyingDocument() });
    expect(replaced.status, replaced.text).toBe(403);
    expect(replaced.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
    const listed = await free.call('GET', `/api/v1/connectors?workspaceId=${free.workspaceId}`);
    expect(listed.body.data.connectors.map((c: { name: string; operations: unknown[] }) => [c.name, c.operations.length])).toEqual([['Small', 1]]);
    expect((await storedBytes(free)) - before).toBe(grew);
  }, 60_000);

  it('lists in pages bounded by size, each reached through nextCursor', async () => {
    const ids: string[] = [];
    for (const name of ['Big 1', 'Big 2', 'Big 3']) {
      const r = await t.call('POST', '/api/v1/connectors', { workspaceId: t.workspaceId, name, spec: amplifyingDocument() });
      expect(r.status, r.text).toBe(201);
      ids.push(r.body.data.connector.id);
    }
    // Pages stop once they hold 8 MiB of stored connectors: two of about 7 MB, then the third.
    const first = await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}`);
    expect(first.status, first.text.slice(0, 300)).toBe(200);
    expect(first.body.data.connectors.map((c: { id: string }) => c.id)).toEqual(ids.slice(0, 2));
    expect(first.body.data.connectors[0].operations).toHaveLength(480);
    expect(typeof first.body.data.nextCursor).toBe('string');
    const second = await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data.connectors.map((c: { id: string }) => c.id)).toEqual(ids.slice(2));
    expect(second.body.data.nextCursor).toBeUndefined();

    const one = await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}&limit=1`);
    expect(one.body.data.connectors.map((c: { id: string }) => c.id)).toEqual(ids.slice(0, 1));
    expect(typeof one.body.data.nextCursor).toBe('string');
    expect((await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}&cursor=nonsense`)).status).toBe(400);
    expect((await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}&limit=0`)).status).toBe(400);
  }, 120_000);

  it(`holds at most ${MAX_CONNECTORS} connectors a workspace, also when creates race`, async () => {
    const ws = await asNewWorkspace(t, 'enterprise', 'connectors-count');
    // All but the last two places filled in the store (the parse is what the API adds); the rest over HTTP.
    const db = t.server.ctx.db;
    for (let i = 0; i < MAX_CONNECTORS - 2; i++) {
      await insertConnector(db, randomUUID(), ws.workspaceId, { name: `Fill ${i}`, baseUrl: 'https://api.example.com', spec: smallDocument, operations: [], auth: null }, null);
    }
    // Four creates at once for two places: on PostgreSQL each counts in its own transaction, so without the
    // workspace's lock two that overlap could both see a place left. (Each create's parse on a thread of its own
    // mostly staggers them here; the secrets and API key suites show that race failing without the lock.)
    const racing = await Promise.all([1, 2, 3, 4].map((i) =>
      ws.call('POST', '/api/v1/connectors', { workspaceId: ws.workspaceId, name: `Last ${i}`, spec: smallDocument })));
    expect(racing.map((r) => r.status).sort(), racing.map((r) => r.text.slice(0, 200)).join('\n')).toEqual([201, 201, 400, 400]);
    expect(racing.find((r) => r.status === 400)?.body.error).toContain(`at most ${MAX_CONNECTORS} connectors`);
    let count = 0;
    let cursor = '';
    do {
      const page = await ws.call('GET', `/api/v1/connectors?workspaceId=${ws.workspaceId}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status, page.text.slice(0, 200)).toBe(200);
      count += page.body.data.connectors.length;
      cursor = page.body.data.nextCursor ?? '';
    } while (cursor);
    expect(count).toBe(MAX_CONNECTORS);
  }, 60_000);
});
