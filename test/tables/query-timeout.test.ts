import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbMode, startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient } from './helpers.js';

// PostgreSQL only: there a row query's statements are cancelled past WEFT_TABLE_QUERY_TIMEOUT_MS. PGlite cannot
// interrupt a statement, so on the embedded database filters are bounded instead (test/tables/filters.test.ts).
describe.skipIf(dbMode() !== 'postgres')('a table query past its time on PostgreSQL (skipped on PGlite: it cannot interrupt a statement)', () => {
  let t: TestServer;
  let c: TablesClient;
  let id: string;

  beforeAll(async () => {
    t = await startTestServer({ env: { WEFT_TABLE_QUERY_TIMEOUT_MS: '1' } });
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
});
