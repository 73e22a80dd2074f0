import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient } from './helpers.js';

// Past WEFT_QUERY_TIMEOUT_MS a row query, an update or a delete by filter is stopped: on PostgreSQL its statement
// is cancelled; the embedded database, which cannot interrupt a statement, is taken back from it by opening the
// data directory on a new thread (test/db/pglite-restart.test.ts). Either way the answer is a 503 and nothing is
// written.
describe('table scans past their time', () => {
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
    await new Promise((r) => setTimeout(r, 50)); // past the cool-down the last test's timeout started
    // Rows whose text ends in "b" match; the scan of the others' 10,000 characters each is what takes long.
    const marked = await c.insertMany(id, [{ s: `${'a'.repeat(300)}b` }]);
    expect(marked.status).toBe(200);
    const filter = { s: { $contains: `${'a'.repeat(255)}b` } };
    const before = await c.snapshot(id);
    const update = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter, data: { s: 'changed' } });
    expect(update.status, update.text).toBe(503);
    expect(update.body).toMatchObject({ code: 'QUERY_TIMEOUT' });
    expect(update.body.error).toMatch(/update ran past 1 ms/);
    // Past the workspace's cool-down (six times the 1 ms timeout: limits/workspace-gate.ts).
    await new Promise((r) => setTimeout(r, 50));
    const del = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter });
    expect(del.status, del.text).toBe(503);
    expect(del.body.error).toMatch(/delete ran past 1 ms/);
    expect(await c.snapshot(id)).toEqual(before);
    expect(before.rows).toBe(2_001);
  });
});
