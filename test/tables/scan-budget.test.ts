import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, type TestResponse } from '../support/harness.js';
import { TablesClient, otherWorkspace } from './helpers.js';

// Scans that each stay under WEFT_QUERY_TIMEOUT_MS still add up: a workspace whose scans held the database for
// more than one query timeout of late is refused for a while (429 QUERY_COOLDOWN), and may hold it a sixth of the
// time on average (limits/workspace-gate.ts; docs/architecture.md, Tables: bounded statements). Here the timeout
// is 3 s and each scan takes a small part of it, so the workspace runs into the budget after some of them.
describe('the database time a workspace\'s scans hold', () => {
  let t: TestServer;
  let c: TablesClient;
  let id: string;
  // A json $contains of 8 elements, 7 of them at the end of arrays of 10,000 numbers: the most one filter may look
  // for, each through the whole array of every row.
  const filter = { j: { $contains: [9_993, 9_994, 9_995, 9_996, 9_997, 9_998, 9_999, -1] } };

  beforeAll(async () => {
    t = await startTestServer({ env: { WEFT_QUERY_TIMEOUT_MS: '3000' } });
    c = await otherWorkspace(t, 'team');
    id = await c.createTable('arrays', [{ name: 'j', type: 'json' }, { name: 'n', type: 'number' }]);
    // Five rows a request: a body holds at most 100,000 members and elements.
    for (let first = 0; first < 20; first += 5) {
      const r = await c.insertMany(id, Array.from({ length: 5 }, (_, k) => ({ j: Array.from({ length: 10_000 }, (_, i) => i), n: first + k })));
      if (r.status !== 200) throw new Error(r.text);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses the workspace\'s scans once they held the database past the budget, not another workspace\'s, and only for a while', async () => {
    const answers: TestResponse[] = [];
    // Bounded: before the budget, none of these was ever refused.
    for (let i = 0; i < 200; i++) {
      const r = await c.query(id, { filter, limit: 1 });
      answers.push(r);
      if (r.status !== 200) break;
    }
    const refused = answers[answers.length - 1];
    expect(answers.slice(0, -1).every((r) => r.status === 200)).toBe(true);
    expect(answers.length).toBeGreaterThan(1);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body).toMatchObject({ code: 'QUERY_COOLDOWN', retryable: true });
    expect(refused.body.error).toMatch(/queries held the database for more than 3 s of late \(a workspace may hold it for 1\/6 of the time on average\)/);
    const seconds = refused.body.retryAfterSeconds as number;
    expect(refused.headers.get('retry-after')).toBe(String(seconds));

    // The same gate holds the workspace's updates and deletes by filter; another workspace is not held.
    const put = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { n: 1 }, data: { n: 100 } });
    expect(put.status, put.text).toBe(429);
    expect(put.body.code).toBe('QUERY_COOLDOWN');
    // So are column changes, which rewrite every row: a tenant repeating them holds the database as scans do.
    const rename = await c.call('PATCH', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, columnName: 'n', updates: { name: 'm' } });
    expect(rename.status, rename.text).toBe(429);
    expect(rename.body.code).toBe('QUERY_COOLDOWN');
    const drop = await c.call('DELETE', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, columnName: 'n' });
    expect(drop.status, drop.text).toBe(429);
    expect((await c.table(id)).schema.columns.map((col: { name: string }) => col.name)).toEqual(['j', 'n']);
    const other = await otherWorkspace(t, 'team');
    const otherTable = await other.createTable('small', [{ name: 'x', type: 'number' }]);
    expect((await other.insert(otherTable, { x: 1 })).status).toBe(200);
    expect((await other.query(otherTable, { filter: { x: 1 } })).status).toBe(200);

    // Once Retry-After has passed, the workspace's scans run again.
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const again = await c.query(id, { filter: { n: 1 } });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.rows.map((x: { data: { n: number } }) => x.data.n)).toEqual([1]);
  });
});
