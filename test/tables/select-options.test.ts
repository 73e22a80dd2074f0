import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

// Select columns of the reference's newest schema: options as {id, name}, cells holding option ids (a list of
// them with `multiple`), written by id or name, filtered by option and sorted by name; options defined as plain
// strings (Weft's earlier form) keep working.

let t: TestServer;
let c: TablesClient;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_QUERY_TIMEOUT_MS: '60000' } });
});
beforeEach(async () => {
  c = await otherWorkspace(t, 'enterprise');
});
afterAll(async () => {
  await t?.close();
});

type Data = Record<string, unknown>;

const COLORS = [{ id: 'c3', name: 'Amber' }, { id: 'c1', name: 'Crimson' }, { id: 'c2', name: 'Blue' }];

const create = (columns: unknown[]) => c.call('POST', '/api/v1/tables', { workspaceId: c.workspaceId, name: uniqueName('sel'), schema: { columns } });
const patch = (tableId: string, columnName: string, updates: Data) =>
  c.call('PATCH', `/api/v1/tables/${tableId}/columns`, { workspaceId: c.workspaceId, columnName, updates });

async function table(columns: unknown[], rows: Data[] = []): Promise<string> {
  const id = await c.createTable(uniqueName('sel'), columns);
  if (rows.length > 0) {
    const r = await c.insertMany(id, rows);
    expect(r.status, r.text).toBe(200);
  }
  return id;
}

/** The `k` values of the rows a query answers, in its order. */
async function keys(tableId: string, q: { filter?: unknown; sort?: unknown }): Promise<unknown[]> {
  const r = await c.query(tableId, q);
  expect(r.status, r.text).toBe(200);
  return r.body.data.rows.map((x: { data: Data }) => x.data.k);
}

/** Everything a refused change must leave as it was: rows (data, timestamps), counters and the stored schema. */
async function state(tableId: string) {
  const [row] = await t.server.ctx.db.query<{ columns: unknown; schema_version: number }>('SELECT columns, schema_version FROM tables WHERE id = $1', [tableId]);
  return { rows: await c.snapshot(tableId), row };
}

describe('select columns: definitions', () => {
  it('take options as names or {id, name}, answer them as {id, name} with multiple', async () => {
    const r = await create([
      { name: 'color', type: 'select', options: [...COLORS, { name: ' Green ' }, 'Violet'] },
      { name: 'tags', type: 'select', options: ['a', { id: 'b', name: 'B' }], multiple: true },
      { name: 's', type: 'string' },
    ]);
    expect(r.status, r.text).toBe(200);
    const [color, tags, s] = r.body.data.table.schema.columns;
    expect(color).toMatchObject({
      type: 'select', multiple: false,
      options: [...COLORS, { id: 'Green', name: 'Green' }, { id: 'Violet', name: 'Violet' }],
    });
    expect(tags).toMatchObject({ type: 'select', multiple: true, options: [{ id: 'a', name: 'a' }, { id: 'b', name: 'B' }] });
    expect(s).not.toHaveProperty('multiple');
    expect(s).not.toHaveProperty('options');
    // The OpenAPI document tells clients the shape.
    const doc = (await c.call('GET', '/api/openapi.json')).body;
    const wire = doc.paths['/api/v1/tables/{tableId}'].get.responses['200'].content['application/json'].schema
      .properties.data.properties.table.properties.schema.properties.columns.items.properties;
    expect(Object.keys(wire.options.items.properties)).toEqual(['id', 'name']);
    expect(wire.multiple.type).toBe('boolean');
  });

  it('refuse options or multiple on another type, duplicate ids and names, and bad ids', async () => {
    const cases: [unknown, string | RegExp][] = [
      [{ name: 'x', type: 'string', options: [{ id: 'a', name: 'A' }] }, 'Column "x": options are only allowed for select columns'],
      [{ name: 'x', type: 'number', multiple: true }, 'Column "x": multiple is only allowed for select columns'],
      [{ name: 'x', type: 'string', multiple: false }, 'Column "x": multiple is only allowed for select columns'],
      [{ name: 'x', type: 'select', options: [{ id: 'a', name: 'A' }, { id: 'a', name: 'B' }] }, /duplicate option id "a"/],
      [{ name: 'x', type: 'select', options: [{ id: 'A', name: 'x' }, 'A'] }, /duplicate option id "A"/],
      [{ name: 'x', type: 'select', options: [{ id: 'a', name: 'Red' }, { id: 'b', name: 'RED' }] }, /duplicate option "RED"/],
      [{ name: 'x', type: 'select', options: [{ id: '', name: 'A' }] }, /./],
      [{ name: 'x', type: 'select', options: [{ id: 'a', name: '  ' }] }, /options must be 1 to 100 characters/],
      [{ name: 'x', type: 'select', options: [] }, /at least one option/],
      [{ name: 'x', type: 'select', options: [{ name: 'A' }], unique: true }, 'Select column "x" cannot be unique'],
    ];
    for (const [column, message] of cases) {
      const r = await create([column]);
      expect(r.status, JSON.stringify(column)).toBe(400);
      if (typeof message === 'string') expect(r.body.error).toBe(message);
      else expect(r.body.error).toMatch(message);
    }
    const id = await table([{ name: 's', type: 'string' }, { name: 'n', type: 'number' }], [{ s: 'x', n: 1 }]);
    const before = await state(id);
    expect((await patch(id, 's', { options: COLORS })).body.error).toBe('Column "s": options are only allowed for select columns');
    expect((await patch(id, 'n', { multiple: true })).body.error).toBe('Column "n": multiple is only allowed for select columns');
    const added = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'z', type: 'date', multiple: true } });
    expect(added.status).toBe(400);
    expect(await state(id)).toEqual(before);
  });
});

describe('select cells', () => {
  it('hold the option id, written by id, name or name in any case; other values are refused naming the options', async () => {
    const id = await table([{ name: 'k', type: 'number' }, { name: 'color', type: 'select', options: COLORS, required: false }]);
    const r = await c.insertMany(id, [{ k: 1, color: 'c1' }, { k: 2, color: 'Blue' }, { k: 3, color: ' amber ' }, { k: 4 }]);
    expect(r.status, r.text).toBe(200);
    expect(await c.all(id)).toEqual([{ k: 1, color: 'c1' }, { k: 2, color: 'c2' }, { k: 3, color: 'c3' }, { k: 4 }]);
    const bad = await c.insert(id, { k: 5, color: 'Green' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/color.*"Green" is not one of the options \("Amber", "Crimson", "Blue"\)/);
    expect((await c.insert(id, { k: 5, color: ['c1'] })).status).toBe(400);
    const rowId = (await c.query(id, { filter: { k: 4 } })).body.data.rows[0].id;
    const updated = await c.call('PATCH', `/api/v1/tables/${id}/rows/${rowId}`, { workspaceId: c.workspaceId, data: { color: 'crimson' } });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data.row.data.color).toBe('c1');
  });

  it('with multiple hold a list of ids: duplicates dropped, order kept, a lone value a list of one, [] allowed', async () => {
    const id = await table([{ name: 'k', type: 'number' }, { name: 'tags', type: 'select', options: COLORS, multiple: true }]);
    const r = await c.insertMany(id, [
      { k: 1, tags: ['Blue', 'c1', 'blue', 'c2'] }, { k: 2, tags: 'amber' }, { k: 3, tags: [] }, { k: 4 },
    ]);
    expect(r.status, r.text).toBe(200);
    expect(await c.all(id)).toEqual([{ k: 1, tags: ['c2', 'c1'] }, { k: 2, tags: ['c3'] }, { k: 3, tags: [] }, { k: 4 }]);
    const bad = await c.insert(id, { k: 5, tags: ['c1', 'Green'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/"Green" is not one of the options/);
    expect((await c.insert(id, { k: 5, tags: [{ id: 'c1' }] })).status).toBe(400);
  });
});

describe('select filters and sorts', () => {
  const rows = [
    { k: 1, color: 'c1', tags: ['c1', 'c2'] },
    { k: 2, color: 'c2', tags: ['c2'] },
    { k: 3, color: 'c3', tags: [] },
    { k: 4 },
    { k: 5, color: 'c1', tags: ['c3', 'c1'] },
  ];
  const columns = [
    { name: 'k', type: 'number' },
    { name: 'color', type: 'select', options: COLORS },
    { name: 'tags', type: 'select', options: COLORS, multiple: true },
  ];

  it('compare a single select by option, names coerced to ids; $ne and $nin include rows without a value', async () => {
    const id = await table(columns, rows);
    expect(await keys(id, { filter: { color: 'Crimson' } })).toEqual([1, 5]);
    expect(await keys(id, { filter: { color: { $eq: 'c2' } } })).toEqual([2]);
    expect(await keys(id, { filter: { color: { $ne: 'crimson' } } })).toEqual([2, 3, 4]);
    expect(await keys(id, { filter: { color: { $in: ['Blue', 'c3'] } } })).toEqual([2, 3]);
    expect(await keys(id, { filter: { color: { $nin: ['Blue', 'c3'] } } })).toEqual([1, 4, 5]);
    expect(await keys(id, { filter: { color: { $in: Array.from({ length: 12 }, () => 'Amber') } } })).toEqual([3]);
    expect(await keys(id, { filter: { color: { $empty: true } } })).toEqual([4]);
    // Substring operators read the option names, not the ids the cells hold.
    expect(await keys(id, { filter: { color: { $contains: 'MSO' } } })).toEqual([1, 5]);
    expect(await keys(id, { filter: { color: { $startsWith: 'c' } } })).toEqual([1, 5]);
    expect(await keys(id, { filter: { color: { $ncontains: 'e' } } })).toEqual([1, 4, 5]);
    expect(await keys(id, { filter: { color: { $like: 'B*' } } })).toEqual([2]);
    const unknown = await c.query(id, { filter: { color: 'Green' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatch(/Invalid value for \$eq on column "color" \(select\): "Green" is not one of the options/);
    expect((await c.query(id, { filter: { color: { $gt: 'c1' } } })).status).toBe(400);
  });

  it('on a multiple select, equality and $contains are membership; $ne, $nin, $ncontains include nulls; $empty matches []', async () => {
    const id = await table(columns, rows);
    expect(await keys(id, { filter: { tags: 'Crimson' } })).toEqual([1, 5]);
    expect(await keys(id, { filter: { tags: { $eq: 'c2' } } })).toEqual([1, 2]);
    expect(await keys(id, { filter: { tags: { $contains: 'amber' } } })).toEqual([5]);
    expect(await keys(id, { filter: { tags: { $contains: ['c1', 'Blue'] } } })).toEqual([1]);
    expect(await keys(id, { filter: { tags: { $ne: 'c1' } } })).toEqual([2, 3, 4]);
    expect(await keys(id, { filter: { tags: { $ncontains: 'Blue' } } })).toEqual([3, 4, 5]);
    expect(await keys(id, { filter: { tags: { $in: ['c3', 'Blue'] } } })).toEqual([1, 2, 5]);
    expect(await keys(id, { filter: { tags: { $in: [...Array.from({ length: 10 }, () => 'c3'), 'Blue'] } } })).toEqual([1, 2, 5]);
    expect(await keys(id, { filter: { tags: { $nin: ['c1'] } } })).toEqual([2, 3, 4]);
    expect(await keys(id, { filter: { tags: { $empty: true } } })).toEqual([3, 4]);
    expect(await keys(id, { filter: { tags: { $empty: false } } })).toEqual([1, 2, 5]);
    expect(await keys(id, { filter: { tags: { $isNull: true } } })).toEqual([4]);
    expect(await keys(id, { filter: { tags: { $startsWith: 'Bl' } } })).toEqual([1, 2]);
    expect((await c.query(id, { filter: { tags: 'Green' } })).status).toBe(400);
    expect((await c.query(id, { filter: { tags: { $eq: [] } } })).status).toBe(400);
    expect((await c.query(id, { filter: { tags: { $lt: 'c1' } } })).status).toBe(400);
  });

  it('sort by option name, not id (a list by its first option), rows without one last', async () => {
    const id = await table(columns, rows);
    // Names: Amber (c3) < Blue (c2) < Crimson (c1); ids sort the other way.
    expect(await keys(id, { sort: { color: 'asc' } })).toEqual([3, 2, 1, 5, 4]);
    expect(await keys(id, { sort: { color: 'desc' } })).toEqual([1, 5, 2, 3, 4]);
    expect(await keys(id, { sort: { tags: 'asc' } })).toEqual([5, 2, 1, 3, 4]);
    expect(await keys(id, { sort: { tags: 'desc', k: 'asc' } })).toEqual([1, 2, 5, 3, 4]);
    expect(await keys(id, { filter: { color: { $ne: 'c2' } }, sort: { color: 'asc' } })).toEqual([3, 1, 5, 4]);
  });

  it('sort option ids holding quotes and backslashes as data', async () => {
    const options = [{ id: "o'1\\", name: 'Zed' }, { id: "\\'); DROP TABLE tables; --", name: 'Alpha' }];
    const id = await table([{ name: 'k', type: 'number' }, { name: 'color', type: 'select', options }],
      [{ k: 1, color: 'Zed' }, { k: 2, color: 'Alpha' }]);
    expect(await c.all(id)).toEqual([{ k: 1, color: options[0].id }, { k: 2, color: options[1].id }]);
    expect(await keys(id, { sort: { color: 'asc' } })).toEqual([2, 1]);
  });

  it('match option names against patterns built to backtrack, and answer', async () => {
    // A regular expression of `a*a*...*b` against a long run of "a" backtracks for minutes; the names are matched
    // by a walk that cannot (select-options.ts wildcardMatches).
    const options = [{ id: 'long', name: 'a'.repeat(100) }, { id: 'ab', name: 'a-b' }];
    const id = await table([{ name: 'k', type: 'number' }, { name: 'color', type: 'select', options }], [{ k: 1, color: 'long' }, { k: 2, color: 'ab' }]);
    const pattern = `${Array(40).fill('a').join('*')}*b`;
    expect(await keys(id, { filter: { color: { $like: pattern } } })).toEqual([]);
    expect(await keys(id, { filter: { color: { $ilike: 'A*B' } } })).toEqual([2]);
    expect(await keys(id, { filter: { color: { $nlike: `${'a*'.repeat(40)}b` } } })).toEqual([1, 2]);
  });
});

describe('select column changes', () => {
  it('rename an option under the same id: every cell keeps it; an option given by name alone keeps the id of that name', async () => {
    const id = await table([{ name: 'k', type: 'number' }, { name: 'color', type: 'select', options: COLORS }, { name: 'tags', type: 'select', options: COLORS, multiple: true }],
      [{ k: 1, color: 'c1', tags: ['c1', 'c2'] }, { k: 2, color: 'c2' }]);
    const before = await c.snapshot(id);
    const r = await patch(id, 'color', { options: [{ id: 'c1', name: 'Scarlet' }, { id: 'c2', name: 'Navy' }, { id: 'c3', name: 'Amber' }] });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.columns[1].options).toEqual([{ id: 'c1', name: 'Scarlet' }, { id: 'c2', name: 'Navy' }, { id: 'c3', name: 'Amber' }]);
    // No row was rewritten.
    expect(await c.snapshot(id)).toEqual(before);
    expect(await keys(id, { filter: { color: 'scarlet' } })).toEqual([1]);
    // A client of the earlier form sends names: those of the same name keep their ids.
    const byName = await patch(id, 'tags', { options: ['Crimson', 'Blue', 'Amber', 'Green'] });
    expect(byName.status, byName.text).toBe(200);
    expect(byName.body.data.columns[2].options).toEqual([...['c1', 'c2', 'c3'].map((x) => COLORS.find((o) => o.id === x)), { id: 'Green', name: 'Green' }]);
    expect(await c.snapshot(id)).toEqual(before);
  });

  it('refuse to remove an option a cell holds, writing nothing', async () => {
    const id = await table([{ name: 'color', type: 'select', options: COLORS }, { name: 'tags', type: 'select', options: COLORS, multiple: true }],
      [{ color: 'c1' }, { color: 'c2', tags: ['c3', 'c2'] }, {}]);
    const before = await state(id);
    const r = await patch(id, 'color', { options: [{ id: 'c2', name: 'Blue' }, { id: 'c3', name: 'Amber' }] });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/^Cannot change column "color" to its options: 1 row\(s\) have incompatible values .*"c1" is not one of the options/);
    const multi = await patch(id, 'tags', { options: [{ id: 'c1', name: 'Crimson' }, { id: 'c3', name: 'Amber' }], name: 'labels' });
    expect(multi.status).toBe(400);
    expect(multi.body.error).toMatch(/1 row\(s\) have incompatible values .*"c2" is not one of the options/);
    expect(await state(id)).toEqual(before);
    // An option no cell holds goes.
    const ok = await patch(id, 'tags', { options: COLORS.filter((o) => o.id !== 'c1') });
    expect(ok.status, ok.text).toBe(200);
    expect((await c.all(id))[1]).toEqual({ color: 'c2', tags: ['c3', 'c2'] });
  });

  it('turn multiple on (x becomes [x]) and off ([x] becomes x, [] no value; a cell of several options refuses it)', async () => {
    const id = await table([{ name: 'k', type: 'number' }, { name: 'color', type: 'select', options: COLORS }],
      [{ k: 1, color: 'c1' }, { k: 2 }, { k: 3, color: 'c3' }]);
    const on = await patch(id, 'color', { multiple: true });
    expect(on.status, on.text).toBe(200);
    expect(on.body.data.columns[1]).toMatchObject({ multiple: true });
    expect(await c.all(id)).toEqual([{ k: 1, color: ['c1'] }, { k: 2 }, { k: 3, color: ['c3'] }]);
    expect(await keys(id, { filter: { color: 'Crimson' } })).toEqual([1]);

    await c.insertMany(id, [{ k: 4, color: ['c1', 'c2'] }, { k: 5, color: ['c2', 'c3', 'c1'] }, { k: 6, color: [] }]);
    const before = await state(id);
    const off = await patch(id, 'color', { multiple: false });
    expect(off.status).toBe(400);
    expect(off.body.error).toMatch(/^Cannot change column "color" to a single select: 2 row\(s\) have incompatible values .*holds [23] options/);
    expect(await state(id)).toEqual(before);

    const rows = (await c.query(id, { filter: { k: { $in: [4, 5] } } })).body.data.rows as { id: string }[];
    const del = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, rowIds: rows.map((r) => r.id) });
    expect(del.status, del.text).toBe(200);
    const off2 = await patch(id, 'color', { multiple: false });
    expect(off2.status, off2.text).toBe(200);
    expect(off2.body.data.columns[1]).toMatchObject({ multiple: false });
    expect(await c.all(id)).toEqual([{ k: 1, color: 'c1' }, { k: 2 }, { k: 3, color: 'c3' }, { k: 6 }]);
  });

  it('retype to text as option names (a list joined with ", "), and text to select by id or name', async () => {
    const id = await table([{ name: 'k', type: 'number' }, { name: 'color', type: 'select', options: COLORS }, { name: 'tags', type: 'select', options: COLORS, multiple: true }],
      [{ k: 1, color: 'c1', tags: ['c2', 'c1'] }, { k: 2, tags: [] }, { k: 3, color: 'c3', tags: ['c3'] }]);
    expect((await patch(id, 'color', { type: 'string' })).status).toBe(200);
    expect((await patch(id, 'tags', { type: 'string' })).status).toBe(200);
    expect(await c.all(id)).toEqual([{ k: 1, color: 'Crimson', tags: 'Blue, Crimson' }, { k: 2 }, { k: 3, color: 'Amber', tags: 'Amber' }]);
    const back = await patch(id, 'color', { type: 'select', options: [{ id: 'x1', name: 'Crimson' }, { id: 'Amber', name: 'Yellow' }] });
    expect(back.status, back.text).toBe(200);
    expect((await c.all(id)).map((r) => r.color)).toEqual(['x1', undefined, 'Amber']);
    const multi = await patch(id, 'tags', { type: 'select', options: COLORS, multiple: true });
    expect(multi.status).toBe(400);
    expect(multi.body.error).toMatch(/"Blue, Crimson" is not one of the options/);
  });

  it('read and write options stored as strings (before options had ids) without rewriting a row', async () => {
    const id = await table([{ name: 'k', type: 'number' }, { name: 'tier', type: 'select', options: ['gold', 'silver'] }], [{ k: 1, tier: 'gold' }, { k: 2, tier: 'silver' }]);
    // Plant the column as earlier versions stored it: options as strings, no `multiple`.
    await t.server.ctx.db.query(
      `UPDATE tables SET columns = jsonb_set(columns #- '{1,multiple}', '{1,options}', '["gold", "silver", "bronze"]') WHERE id = $1`, [id]);
    const [{ columns }] = await t.server.ctx.db.query<{ columns: { options: unknown }[] }>('SELECT columns FROM tables WHERE id = $1', [id]);
    expect(columns[1].options).toEqual(['gold', 'silver', 'bronze']);
    expect((await c.table(id)).schema.columns[1]).toMatchObject({
      multiple: false, options: [{ id: 'gold', name: 'gold' }, { id: 'silver', name: 'silver' }, { id: 'bronze', name: 'bronze' }],
    });
    expect((await c.insert(id, { k: 3, tier: 'BRONZE' })).status).toBe(200);
    expect(await c.all(id)).toEqual([{ k: 1, tier: 'gold' }, { k: 2, tier: 'silver' }, { k: 3, tier: 'bronze' }]);
    expect(await keys(id, { filter: { tier: { $in: ['Silver', 'bronze'] } }, sort: { tier: 'desc' } })).toEqual([2, 3]);
    const before = await c.snapshot(id);
    const renamed = await patch(id, 'tier', { options: [{ id: 'gold', name: 'Gold' }, 'silver', 'bronze'] });
    expect(renamed.status, renamed.text).toBe(200);
    expect(await c.snapshot(id)).toEqual(before);
    expect(await keys(id, { filter: { tier: 'Gold' } })).toEqual([1]);
  });
});
