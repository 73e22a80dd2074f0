import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

// POST /api/v1/tables/{tableId}/rows with afterRowId / beforeRowId: a single row placed next to another.

let t: TestServer;
let c: TablesClient;
beforeAll(async () => {
  t = await startTestServer();
  c = await otherWorkspace(t, 'enterprise');
});
afterAll(async () => {
  await t?.close();
});

const columns = [{ name: 'k', type: 'string' }];

const insertAt = (tableId: string, k: string, anchor: Record<string, unknown>, client = c) =>
  client.call('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: client.workspaceId, data: { k }, ...anchor });

/** The table's rows in table order: key and position. */
async function order(tableId: string): Promise<[string, number][]> {
  const r = await c.query(tableId, { limit: 1000 });
  return r.body.data.rows.map((x: { data: { k: string }; position: number }) => [x.data.k, x.position]);
}

async function tableWith(keys: string[]): Promise<{ id: string; rows: Record<string, string> }> {
  const id = await c.createTable(uniqueName('anchors'), columns);
  const r = await c.insertMany(id, keys.map((k) => ({ k })));
  return { id, rows: Object.fromEntries(r.body.data.rows.map((x: { id: string; data: { k: string } }) => [x.data.k, x.id])) };
}

describe('anchored insert', () => {
  it('places a row right after or right before another; the rows from there move on one place', async () => {
    const { id, rows } = await tableWith(['a', 'b', 'c']);
    const after = await insertAt(id, 'x', { afterRowId: rows.a });
    expect(after.status).toBe(200);
    expect(after.body.data).toMatchObject({ message: 'Row inserted successfully', row: { data: { k: 'x' }, position: 1 } });
    expect(await order(id)).toEqual([['a', 0], ['x', 1], ['b', 2], ['c', 3]]);

    const before = await insertAt(id, 'y', { beforeRowId: rows.a });
    expect(before.body.data.row.position).toBe(0);
    expect(await order(id)).toEqual([['y', 0], ['a', 1], ['x', 2], ['b', 3], ['c', 4]]);

    const last = await insertAt(id, 'z', { afterRowId: rows.c });
    expect(last.body.data.row.position).toBe(5);
    // Appending goes on after them all.
    expect((await c.insert(id, { k: 'end' })).body.data.row.position).toBe(6);
    expect((await c.insertMany(id, [{ k: 'e1' }, { k: 'e2' }])).body.data.rows.map((x: { position: number }) => x.position)).toEqual([7, 8]);
    expect((await order(id)).map(([k]) => k)).toEqual(['y', 'a', 'x', 'b', 'c', 'z', 'end', 'e1', 'e2']);
    expect((await c.table(id)).rowCount).toBe(9);
  });

  it('takes a free place after the anchor without moving rows', async () => {
    const { id, rows } = await tableWith(['a', 'b', 'c']);
    await c.call('DELETE', `/api/v1/tables/${id}/rows/${rows.b}?workspaceId=${c.workspaceId}`);
    const before = (await c.query(id)).body.data.rows;
    const r = await insertAt(id, 'x', { afterRowId: rows.a });
    expect(r.body.data.row.position).toBe(1);
    expect(await order(id)).toEqual([['a', 0], ['x', 1], ['c', 2]]);
    const after = (await c.query(id)).body.data.rows;
    expect(after[2]).toEqual(before[1]);
  });

  it('keeps positions unique under concurrent anchored and plain inserts', async () => {
    const { id, rows } = await tableWith(['a', 'b']);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      (i % 3 === 0 ? c.insert(id, { k: `p${i}` }) : insertAt(id, `n${i}`, i % 3 === 1 ? { afterRowId: rows.a } : { beforeRowId: rows.b }))));
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
    const now = await order(id);
    expect(now).toHaveLength(14);
    expect(new Set(now.map(([, p]) => p)).size).toBe(14);
    const keys = now.map(([k]) => k);
    expect(keys.indexOf('a')).toBeLessThan(keys.indexOf('b'));
    // Every row placed between a and b is there; the plain ones come after b.
    for (let i = 0; i < 12; i++) {
      const at = keys.indexOf(i % 3 === 0 ? `p${i}` : `n${i}`);
      if (i % 3 === 0) expect(at).toBeGreaterThan(keys.indexOf('b'));
      else expect(at > keys.indexOf('a') && at < keys.indexOf('b')).toBe(true);
    }
    expect((await c.table(id)).rowCount).toBe(14);
  });

  it('refuses both anchors at once with 400, and an unknown anchor with 404, writing nothing', async () => {
    const { id, rows } = await tableWith(['a', 'b']);
    const other = await otherWorkspace(t, 'team');
    const foreign = await other.createTable('theirs', columns);
    const foreignRow = (await other.insert(foreign, { k: 'f' })).body.data.row.id;
    const sibling = await c.createTable(uniqueName('sibling'), columns);
    const siblingRow = (await c.insert(sibling, { k: 's' })).body.data.row.id;
    const before = await c.snapshot(id);

    const both = await insertAt(id, 'x', { afterRowId: rows.a, beforeRowId: rows.b });
    expect(both.status).toBe(400);
    expect(both.body).toEqual({ error: 'afterRowId and beforeRowId are mutually exclusive' });
    for (const anchor of [{ afterRowId: 'row_00000000000000000000000000000000' }, { beforeRowId: 'nope' }, { afterRowId: foreignRow }, { beforeRowId: siblingRow }]) {
      const r = await insertAt(id, 'x', anchor);
      expect(r.status, JSON.stringify(anchor)).toBe(404);
      expect(r.body).toEqual({ error: 'Row not found' });
    }
    // A bad row is refused before its anchor is looked up.
    const badRow = await c.call('POST', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, data: { k: 1, nope: 2 }, afterRowId: rows.a });
    expect(badRow.status).toBe(400);
    expect(await c.snapshot(id)).toEqual(before);
    expect(await order(id)).toEqual([['a', 0], ['b', 1]]);
  });

  it('leaves a batch at the end, as the reference does (its anchors belong to the single form)', async () => {
    const { id, rows } = await tableWith(['a', 'b']);
    const r = await c.call('POST', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, rows: [{ k: 'x' }], afterRowId: rows.a, beforeRowId: rows.b });
    expect(r.status).toBe(200);
    expect(await order(id)).toEqual([['a', 0], ['b', 1], ['x', 2]]);
  });

  it('counts an anchored row against the row cap', async () => {
    const { id, rows } = await tableWith(['a', 'b']);
    await t.server.ctx.db.query('UPDATE tables SET max_rows = 2 WHERE id = $1', [id]);
    const before = await c.snapshot(id);
    const r = await insertAt(id, 'x', { afterRowId: rows.a });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('This table has reached its row limit (2 rows) on your current plan.');
    expect(await c.snapshot(id)).toEqual(before);
    expect(await order(id)).toEqual([['a', 0], ['b', 1]]);
  });
});
