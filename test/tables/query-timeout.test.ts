import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbMode, startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient } from './helpers.js';

// PostgreSQL only: there the statements of a row query and of an update or delete by filter are cancelled past
// WEFT_QUERY_TIMEOUT_MS. PGlite cannot interrupt a statement, so on the embedded database filters are bounded
// instead (test/tables/filters.test.ts).
describe.skipIf(dbMode() !== 'postgres')('table scans past their time on PostgreSQL (skipped on PGlite: it cannot interrupt a statement)', () => {
  let t: TestServer;
  let c: TablesClient;
  let id: string;

  beforeAll(async () => {
    t = await startTestServer({ env: { WEFT_QUERY_TIMEOUT_MS: '1' } });
    c = new TablesClient(t);
    id = await c.createTable('slow', [{ name: 's', type: 'string' }]);
    // 20 MB of one letter: a substring scan of it takes far longer than a millisecond.
    for (let i = 0; i < 5; i++) {
      const r = await c.insertMany(id, Array.from({ length: 400 }, () => ({ s: 'a'.repeat(10_000) })));
      if (r.status !== 200) throw new Error(r.text);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is stopped and answered 503 naming the limit, and the next query runs', async () => {
    const r = await c.query(id, { filter: { s: { $contains: `${'a'.repeat(255)}b` } } });
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ code: 'QUERY_TIMEOUT' });
    expect(r.body.error).toMatch(/ran past 1 ms and was stopped/);
    const list = await c.call('GET', `/api/v1/tables?workspaceId=${c.workspaceId}`);
    expect(list.status).toBe(200);
    expect(list.body.data.tables.map((x: { id: string }) => x.id)).toContain(id);
  });

  it('stops an update or a delete by filter the same way, and neither writes anything', async () => {
    // Rows whose text ends in "b" match; the scan of the others' 10,000 characters each is what takes long.
    const marked = await c.insertMany(id, [{ s: `${'a'.repeat(300)}b` }]);
    expect(marked.status).toBe(200);
    const filter = { s: { $contains: `${'a'.repeat(255)}b` } };
    const before = await c.snapshot(id);
    const update = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter, data: { s: 'changed' } });
    expect(update.status, update.text).toBe(503);
    expect(update.body).toMatchObject({ code: 'QUERY_TIMEOUT' });
    expect(update.body.error).toMatch(/update ran past 1 ms/);
    const del = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter });
    expect(del.status, del.text).toBe(503);
    expect(del.body.error).toMatch(/delete ran past 1 ms/);
    expect(await c.snapshot(id)).toEqual(before);
    expect(before.rows).toBe(2_001);
  });
});
