import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { columnIndexes, derivedColumnId } from '../../src/tables/store.js';
import { tableStorageBytes } from '../../src/tables/service.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

// PATCH and DELETE /api/v1/tables/{tableId}/columns: rename, retype, flags and options over the rows a table
// holds, with its indexes, counters and audit entries; refusals write nothing.

let t: TestServer;
let c: TablesClient;
beforeAll(async () => {
  // Column changes are charged to the workspace's budget of database time (one query timeout): a generous timeout
  // and a workspace per test keep a loaded machine's slow rewrites from refusing the next test's.
  t = await startTestServer({ env: { WEFT_QUERY_TIMEOUT_MS: '60000' } });
});
beforeEach(async () => {
  c = await otherWorkspace(t, 'enterprise');
});
afterAll(async () => {
  await t?.close();
});

const COLUMN_ID = /^col_[0-9a-f]{32}$/;

type Columns = { id: string; name: string; type: string; required: boolean; unique: boolean; options?: { id: string; name: string }[] }[];

const patch = (tableId: string, columnName: string, updates: Record<string, unknown>, client = c) =>
  client.call('PATCH', `/api/v1/tables/${tableId}/columns`, { workspaceId: client.workspaceId, columnName, updates });
const remove = (tableId: string, columnName: string, client = c) =>
  client.call('DELETE', `/api/v1/tables/${tableId}/columns`, { workspaceId: client.workspaceId, columnName });

/** Everything a refused change must leave as it was: rows (data, timestamps), counters, schema and indexes. */
async function state(tableId: string) {
  const db = t.server.ctx.db;
  const [table] = await db.query<{ columns: unknown; bytes: number; row_count: number; schema_version: number; updated_at: Date }>(
    'SELECT columns, bytes::float8 AS bytes, row_count, schema_version, updated_at FROM tables WHERE id = $1', [tableId]);
  const indexes = (await db.query<{ indexname: string }>(
    'SELECT indexname FROM pg_indexes WHERE indexname LIKE $1 ORDER BY indexname', [`t${tableId.slice(4)}%`])).map((r) => r.indexname);
  return { rows: await c.snapshot(tableId), table, indexes };
}

/** The table's byte counter against the bytes its rows hold. */
async function bytesOf(tableId: string): Promise<{ counter: number; actual: number }> {
  const [r] = await t.server.ctx.db.query<{ counter: number; actual: number }>(
    `SELECT t.bytes::float8 AS counter, (SELECT COALESCE(sum(octet_length(data::text)), 0)::float8 FROM table_rows WHERE table_id = t.id) AS actual
       FROM tables t WHERE t.id = $1`, [tableId]);
  return r;
}

async function indexNames(tableId: string): Promise<string[]> {
  return (await t.server.ctx.db.query<{ indexname: string }>(
    'SELECT indexname FROM pg_indexes WHERE indexname LIKE $1 ORDER BY indexname', [`t${tableId.slice(4)}%`])).map((r) => r.indexname);
}

/** The index names a column as defined calls for. */
function expectedIndexes(tableId: string, column: { name: string; type: string; unique?: boolean }): string[] {
  const specs = columnIndexes(tableId, { required: false, unique: false, ...column } as never);
  return [specs.unique?.name, specs.typed?.name].filter((n): n is string => n !== undefined);
}

const people = [
  { name: 'email', type: 'string', required: true, unique: true },
  { name: 'age', type: 'number' },
  { name: 'born', type: 'date' },
  { name: 'note', type: 'string' },
];

describe('rename', () => {
  it('renames the column in the schema and every row, keeps its id, moves its indexes and keeps the counters right', async () => {
    const id = await c.createTable(uniqueName('rename'), people);
    const before = (await c.table(id)).schema.columns as Columns;
    await c.insertMany(id, [
      { email: 'a@x', age: 30, born: '1990-01-02' }, { email: 'b@x', age: 25, note: 'hi' }, { email: 'c@x' },
    ]);
    const rowsBefore = (await c.query(id)).body.data.rows;
    const tableBefore = await c.table(id);
    await new Promise((r) => setTimeout(r, 5));

    const r = await patch(id, 'age', { name: 'years_old' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: { columns: [before[0], { ...before[1], name: 'years_old' }, before[2], before[3]] },
    });
    const table = await c.table(id);
    expect(table.schema.columns).toEqual(r.body.data.columns);
    expect(table.rowCount).toBe(3);
    expect(Date.parse(table.updatedAt)).toBeGreaterThan(Date.parse(tableBefore.updatedAt));

    const rows = (await c.query(id)).body.data.rows;
    expect(rows.map((x: { data: unknown }) => x.data)).toEqual([
      { email: 'a@x', years_old: 30, born: '1990-01-02' }, { email: 'b@x', years_old: 25, note: 'hi' }, { email: 'c@x' },
    ]);
    // A schema change is the table's: the rows keep their ids, places and timestamps.
    expect(rows.map((x: { id: string; position: number; updatedAt: string }) => [x.id, x.position, x.updatedAt]))
      .toEqual(rowsBefore.map((x: { id: string; position: number; updatedAt: string }) => [x.id, x.position, x.updatedAt]));

    const indexes = await indexNames(id);
    for (const name of expectedIndexes(id, { name: 'years_old', type: 'number' })) expect(indexes).toContain(name);
    for (const name of expectedIndexes(id, { name: 'age', type: 'number' })) expect(indexes).not.toContain(name);
    expect(indexes).toHaveLength(3); // unique email, typed years_old, typed born

    const counters = await bytesOf(id);
    expect(counters.counter).toBe(counters.actual);
    const storage = await t.server.ctx.db.query<{ n: number }>(`SELECT (${tableStorageBytes.sql})::float8 AS n`, [c.workspaceId]);
    const all = await t.server.ctx.db.query<{ n: number }>(
      'SELECT COALESCE(sum(octet_length(r.data::text)), 0)::float8 AS n FROM table_rows r JOIN tables x ON x.id = r.table_id WHERE x.workspace_id = $1', [c.workspaceId]);
    expect(storage[0].n).toBe(all[0].n);

    // Filters, sorts, inserts and updates use the new name; the old one is unknown.
    const q = await c.query(id, { filter: { years_old: { $gte: 26 } }, sort: { years_old: 'desc' } });
    expect(q.body.data.rows.map((x: { data: { email: string } }) => x.data.email)).toEqual(['a@x']);
    expect((await c.insert(id, { email: 'd@x', years_old: 1 })).status).toBe(200);
    const old = await c.insert(id, { email: 'e@x', age: 1 });
    expect(old.status).toBe(400);
    expect(old.body.error).toBe('Unknown column "age"');
  });

  it('renames a unique column: uniqueness holds under the new name', async () => {
    const id = await c.createTable(uniqueName('renameuniq'), people);
    await c.insertMany(id, [{ email: 'a@x' }, { email: 'b@x' }]);
    const r = await patch(id, 'email', { name: 'mail' });
    expect(r.status).toBe(200);
    const dup = await c.insert(id, { mail: 'a@x' });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ column: 'mail', value: 'a@x' });
    const upsert = await c.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: c.workspaceId, data: { mail: 'b@x', age: 3 } });
    expect(upsert.body.data.operation).toBe('update');
    expect(await indexNames(id)).toEqual(expect.arrayContaining(expectedIndexes(id, { name: 'mail', type: 'string', unique: true })));
  });

  it('names the column by its id, and may change only its letter case', async () => {
    const id = await c.createTable(uniqueName('renamebyid'), people);
    await c.insert(id, { email: 'a@x', note: 'n' });
    const noteId = (await c.table(id)).schema.columns[3].id;
    const r = await patch(id, noteId, { name: 'Note' });
    expect(r.status).toBe(200);
    expect(r.body.data.columns[3]).toMatchObject({ id: noteId, name: 'Note' });
    expect(await c.all(id)).toEqual([{ email: 'a@x', Note: 'n' }]);
    const del = await remove(id, noteId);
    expect(del.status).toBe(200);
    expect(del.body.data.columns.map((x: { name: string }) => x.name)).toEqual(['email', 'age', 'born']);
  });

  it.each([
    ['a clash with another column, whatever its case', { name: 'EMAIL' }, 'Column "EMAIL" already exists'],
    ['an invalid name', { name: '1st' }, /Invalid column name "1st"/],
    ['a reserved name', { name: 'createdAt' }, 'Column name "createdAt" is reserved'],
    ['a name too long', { name: 'x'.repeat(51) }, /.+/],
  ])('refuses %s with 400 and writes nothing', async (_label, updates, message) => {
    const id = await c.createTable(uniqueName('renamebad'), people);
    await c.insertMany(id, [{ email: 'a@x', age: 1 }, { email: 'b@x' }]);
    const before = await state(id);
    const r = await patch(id, 'age', updates);
    expect(r.status).toBe(400);
    if (typeof message === 'string') expect(r.body.error).toBe(message);
    else expect(r.body.error).toMatch(message);
    expect(await state(id)).toEqual(before);
  });
});

describe('retype', () => {
  it('converts every value with the rules inserts use, rewrites them and builds the typed index', async () => {
    const id = await c.createTable(uniqueName('retype'), [{ name: 'k', type: 'string' }, { name: 'v', type: 'string' }]);
    await c.insertMany(id, [{ k: 'a', v: '1' }, { k: 'b', v: ' 2.5 ' }, { k: 'c' }, { k: 'd', v: '-1e2' }]);
    const r = await patch(id, 'v', { type: 'number' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.columns[1]).toMatchObject({ name: 'v', type: 'number' });
    expect(await c.all(id)).toEqual([{ k: 'a', v: 1 }, { k: 'b', v: 2.5 }, { k: 'c' }, { k: 'd', v: -100 }]);
    expect(await indexNames(id)).toEqual(expectedIndexes(id, { name: 'v', type: 'number' }));
    const q = await c.query(id, { filter: { v: { $gt: 0 } }, sort: { v: 'asc' } });
    expect(q.body.data.rows.map((x: { data: { k: string } }) => x.data.k)).toEqual(['a', 'b']);
    expect((await bytesOf(id)).counter).toBe((await bytesOf(id)).actual);

    // And back: numbers become their text, as an insert into a text column makes them.
    expect((await patch(id, 'v', { type: 'string' })).status).toBe(200);
    expect(await c.all(id)).toEqual([{ k: 'a', v: '1' }, { k: 'b', v: '2.5' }, { k: 'c' }, { k: 'd', v: '-100' }]);
    expect(await indexNames(id)).toEqual([]);
    const counters = await bytesOf(id);
    expect(counters.counter).toBe(counters.actual);
  });

  it.each([
    ['date', ['2024-01-15', 'Jan 16, 2024', '01/17/2024 10:30'], ['2024-01-15', '2024-01-16', '2024-01-17T10:30:00.000Z']],
    ['boolean', ['true', ' FALSE ', 'True'], [true, false, true]],
    ['json', ['x', '1', '{'], ['x', '1', '{']],
    ['select', ['gold', 'SILVER', 'Gold'], ['Gold', 'Silver', 'Gold']],
  ])('converts text to %s', async (type, input, output) => {
    const id = await c.createTable(uniqueName('to'), [{ name: 'v', type: 'string' }]);
    await c.insertMany(id, input.map((v) => ({ v })));
    const r = await patch(id, 'v', { type, ...(type === 'select' ? { options: ['Gold', 'Silver'] } : {}) });
    expect(r.status, r.text).toBe(200);
    expect((await c.all(id)).map((x) => x.v)).toEqual(output);
  });

  it('refuses values that do not convert: 400 counting them and naming one, nothing written', async () => {
    const id = await c.createTable(uniqueName('retypebad'), [{ name: 'v', type: 'string', unique: true }, { name: 'j', type: 'json' }]);
    const rows = (await c.insertMany(id, [{ v: '1' }, { v: 'abc' }, { v: '3' }, { v: 'x' }, { j: { a: 1 } }])).body.data.rows;
    const before = await state(id);
    const r = await patch(id, 'v', { type: 'number' });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(`Cannot change column "v" to number: 2 row(s) have incompatible values (e.g. row ${rows[1].id}: expected a number, got "abc")`);
    expect(r.body).toMatchObject({ column: 'v', value: 'abc' });
    expect(await state(id)).toEqual(before);

    const obj = await patch(id, 'j', { type: 'string' });
    expect(obj.status).toBe(400);
    expect(obj.body.error).toMatch(/1 row\(s\) have incompatible values .*expected a string, got an object/);
    const date = await patch(id, 'v', { type: 'date' });
    expect(date.status).toBe(400);
    expect(date.body.error).toMatch(/to date: 4 row\(s\) have incompatible values/);
    expect(await state(id)).toEqual(before);
  });

  it('converts a table larger than one batch, and counts the values that fail across batches', async () => {
    const id = await c.createTable(uniqueName('retypebig'), [{ name: 'v', type: 'string' }]);
    for (let b = 0; b < 3; b++) {
      const r = await c.insertMany(id, Array.from({ length: 1000 }, (_, i) => ({ v: String(b * 1000 + i) })));
      expect(r.status).toBe(200);
    }
    await c.insert(id, { v: 'not a number' });
    const rows = (await c.query(id, { filter: { v: 'not a number' } })).body.data.rows;
    await c.call('PATCH', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, updates: [{ rowId: rows[0].id, data: { v: null } }] });
    await c.call('PATCH', `/api/v1/tables/${id}/rows`, {
      workspaceId: c.workspaceId,
      updates: [{ rowId: (await c.query(id, { filter: { v: '5' } })).body.data.rows[0].id, data: { v: 'five' } }],
    });
    const last = (await c.insert(id, { v: 'minus one' })).body.data.row;
    const before = await state(id);
    const bad = await patch(id, 'v', { type: 'number' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/^Cannot change column "v" to number: 2 row\(s\) have incompatible values \(e\.g\. row row_[0-9a-f]{32}: expected a number, got "five"\)$/);
    expect(await state(id)).toEqual(before);

    await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, rowIds: [last.id] });
    await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { v: 'five' }, data: { v: '5' } });
    const ok = await patch(id, 'v', { type: 'number' });
    expect(ok.status, ok.text).toBe(200);
    const sum = await t.server.ctx.db.query<{ n: number; s: number; nums: number }>(
      "SELECT count(*)::int AS n, sum((data->>'v')::numeric)::float8 AS s, count(*) FILTER (WHERE jsonb_typeof(data->'v') = 'number')::int AS nums FROM table_rows WHERE table_id = $1",
      [id]);
    expect(sum[0]).toEqual({ n: 3001, s: (2999 * 3000) / 2, nums: 3000 });
    const counters = await bytesOf(id);
    expect(counters.counter).toBe(counters.actual);
  });

  it('converts epoch numbers to unique dates, and the new indexes serve filters and sorts', async () => {
    const id = await c.createTable(uniqueName('epoch'), [{ name: 'at', type: 'number' }, { name: 'n', type: 'string' }]);
    await c.insertMany(id, [{ at: 86_400_000, n: '10' }, { at: 0, n: '-2' }, { n: '3' }]);
    expect((await patch(id, 'at', { type: 'date', unique: true })).status).toBe(200);
    expect((await patch(id, 'n', { type: 'number' })).status).toBe(200);
    expect(await c.all(id)).toEqual([{ at: '1970-01-02T00:00:00.000Z', n: 10 }, { at: '1970-01-01T00:00:00.000Z', n: -2 }, { n: 3 }]);
    expect((await c.insert(id, { at: '1970-01-01' })).status).toBe(409);
    const q = await c.query(id, { filter: { at: { $gte: '1970-01-01T12:00:00Z' } } });
    expect(q.body.data.rows.map((x: { data: { n: number } }) => x.data.n)).toEqual([10]);
    const sorted = await c.query(id, { sort: { n: 'desc' } });
    expect(sorted.body.data.rows.map((x: { data: { n: number } }) => x.data.n)).toEqual([10, 3, -2]);

    // The planner matches the indexes built after the change with the expressions filters use.
    const { typedExpression, uniqueExpression } = await import('../../src/tables/column-sql.js');
    const columns = (await t.server.ctx.db.query<{ columns: never[] }>('SELECT columns FROM tables WHERE id = $1', [id]))[0].columns;
    const [at, n] = columns as { name: string; type: 'date' | 'number'; required: boolean; unique: boolean; guarded?: boolean }[];
    expect([at.guarded, n.guarded]).toEqual([true, true]);
    const plans = await t.server.ctx.db.tx(async (q) => {
      await q.exec('SET LOCAL enable_seqscan = off');
      const explain = async (where: string) => (await q.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT id FROM table_rows r WHERE r.table_id = $1 AND ${where}`, [id]))
        .map((r) => r['QUERY PLAN']).join('\n');
      return [await explain(`${uniqueExpression(at, 'r')} > now()`), await explain(`${typedExpression(n, 'r')} > 1`)];
    });
    expect(plans[0]).toContain(columnIndexes(id, at).unique!.name);
    expect(plans[1]).toContain(columnIndexes(id, n).typed!.name);
  });

  it('converts rows of hundreds of kilobytes in slices', async () => {
    const id = await c.createTable(uniqueName('retypewide'), [{ name: 'blob', type: 'json' }, { name: 'n', type: 'string' }]);
    // 30 rows of 300 KB: more than one slice of 8 MiB.
    for (let b = 0; b < 3; b++) {
      const r = await c.insertMany(id, Array.from({ length: 10 }, (_, i) => ({ blob: 'b'.repeat(300_000), n: String(b * 10 + i) })));
      expect(r.status).toBe(200);
    }
    const r = await patch(id, 'n', { type: 'number' });
    expect(r.status, r.text).toBe(200);
    const rows = await t.server.ctx.db.query<{ n: number }>("SELECT (data->'n')::int AS n FROM table_rows WHERE table_id = $1 ORDER BY position", [id]);
    expect(rows.map((x) => x.n)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    const counters = await bytesOf(id);
    expect(counters.counter).toBe(counters.actual);
  });

  it('refuses a conversion that makes unique values collide (400, nothing written)', async () => {
    const id = await c.createTable(uniqueName('retypedup'), [{ name: 'v', type: 'string', unique: true }]);
    await c.insertMany(id, [{ v: '1' }, { v: '1.0' }, { v: '2' }]);
    const before = await state(id);
    const r = await patch(id, 'v', { type: 'number' });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/duplicate values exist/);
    expect(await state(id)).toEqual(before);
  });
});

describe('required, unique and options', () => {
  it('makes a column required only when every row has a value', async () => {
    const id = await c.createTable(uniqueName('req'), people);
    await c.insertMany(id, [{ email: 'a@x', age: 1 }, { email: 'b@x' }, { email: 'c@x' }]);
    const before = await state(id);
    const r = await patch(id, 'age', { required: true });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('Cannot make column "age" required: 2 row(s) have no value for it');
    expect(await state(id)).toEqual(before);

    await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { age: { $isNull: true } }, data: { age: 9 } });
    const ok = await patch(id, 'age', { required: true });
    expect(ok.status).toBe(200);
    expect(ok.body.data.columns[1]).toMatchObject({ name: 'age', required: true });
    const missing = await c.insert(id, { email: 'd@x' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('Missing required field: age');
    expect((await patch(id, 'age', { required: false })).status).toBe(200);
    expect((await c.insert(id, { email: 'd@x' })).status).toBe(200);
  });

  it('makes a column unique unless it holds duplicates, and drops the index when it stops being unique', async () => {
    const id = await c.createTable(uniqueName('uniq'), people);
    await c.insertMany(id, [{ email: 'a@x', note: 'same' }, { email: 'b@x', note: 'same' }, { email: 'c@x', note: 'other' }]);
    const before = await state(id);
    const r = await patch(id, 'note', { unique: true });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('Cannot make column "note" unique: duplicate values exist');
    expect(await state(id)).toEqual(before);

    await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { email: 'b@x' }, data: { note: 'third' } });
    const ok = await patch(id, 'note', { unique: true });
    expect(ok.status).toBe(200);
    expect(await indexNames(id)).toEqual(expect.arrayContaining(expectedIndexes(id, { name: 'note', type: 'string', unique: true })));
    expect((await c.insert(id, { email: 'd@x', note: 'other' })).status).toBe(409);

    const off = await patch(id, 'note', { unique: false });
    expect(off.status).toBe(200);
    expect(await indexNames(id)).not.toEqual(expect.arrayContaining(expectedIndexes(id, { name: 'note', type: 'string', unique: true })));
    expect((await c.insert(id, { email: 'd@x', note: 'other' })).status).toBe(200);
  });

  it('keeps the typed index of a number column made unique and back, and renames and retypes in one call', async () => {
    const id = await c.createTable(uniqueName('combo'), [{ name: 'n', type: 'number' }, { name: 'k', type: 'string' }]);
    await c.insertMany(id, [{ n: 1, k: '2024-01-01' }, { n: 2, k: 'Feb 2, 2024' }]);
    expect((await patch(id, 'n', { unique: true })).status).toBe(200);
    expect(await indexNames(id)).toEqual(expectedIndexes(id, { name: 'n', type: 'number', unique: true }).sort());
    expect((await patch(id, 'n', { unique: false })).status).toBe(200);
    expect(await indexNames(id)).toEqual(expectedIndexes(id, { name: 'n', type: 'number' }));

    const r = await patch(id, 'k', { name: 'day', type: 'date', unique: true, required: true });
    expect(r.status).toBe(200);
    expect(r.body.data.columns[1]).toMatchObject({ name: 'day', type: 'date', unique: true, required: true });
    expect(await c.all(id)).toEqual([{ n: 1, day: '2024-01-01' }, { n: 2, day: '2024-02-02' }]);
    const dup = await c.insert(id, { n: 3, day: '2024-02-02T00:00:00Z' });
    expect(dup.status).toBe(409);
    expect(dup.body.column).toBe('day');
  });

  it('changes select options when every value is among the new ones (taking their spelling)', async () => {
    const id = await c.createTable(uniqueName('opts'), [{ name: 'tier', type: 'select', options: ['gold', 'silver', 'bronze'] }]);
    await c.insertMany(id, [{ tier: 'gold' }, { tier: 'silver' }, { tier: 'gold' }, {}]);
    const before = await state(id);
    const r = await patch(id, 'tier', { options: ['gold', 'bronze'] });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/^Cannot change column "tier" to its options: 1 row\(s\) have incompatible values .*"silver" is not one of the options/);
    expect(await state(id)).toEqual(before);

    const ok = await patch(id, 'tier', { options: ['Gold', 'Silver', 'Platinum'] });
    expect(ok.status).toBe(200);
    // Options given by name alone take their name as their id: cells follow the new spelling.
    expect(ok.body.data.columns[0].options).toEqual(['Gold', 'Silver', 'Platinum'].map((o) => ({ id: o, name: o })));
    expect(await c.all(id)).toEqual([{ tier: 'Gold' }, { tier: 'Silver' }, { tier: 'Gold' }, {}]);
    expect((await c.insert(id, { tier: 'bronze' })).status).toBe(400);
  });

  it('refuses a unique select column, options on another type, and a select without options', async () => {
    const id = await c.createTable(uniqueName('selbad'), [{ name: 'tier', type: 'select', options: ['a', 'b'] }, { name: 's', type: 'string' }]);
    await c.insert(id, { tier: 'a', s: 'a' });
    const before = await state(id);
    const cases: [string, Record<string, unknown>, string | RegExp][] = [
      ['tier', { unique: true }, 'Select column "tier" cannot be unique'],
      ['s', { type: 'select', options: ['a'], unique: true }, 'Select column "s" cannot be unique'],
      ['s', { options: ['a'] }, 'Column "s": options are only allowed for select columns'],
      ['s', { type: 'select' }, 'Select column "s" needs at least one option'],
      ['tier', { type: 'money' }, /type/],
    ];
    for (const [column, updates, message] of cases) {
      const r = await patch(id, column, updates);
      expect(r.status, JSON.stringify(updates)).toBe(400);
      if (typeof message === 'string') expect(r.body.error).toBe(message);
      else expect(r.body.error).toMatch(message);
    }
    expect(await state(id)).toEqual(before);
  });

  it('lets a unique select column from before they were refused be renamed or made non-unique', async () => {
    const id = await c.createTable(uniqueName('legacysel'), [{ name: 'tier', type: 'select', options: ['a', 'b'] }, { name: 'x', type: 'string' }]);
    // Such a column can no longer be defined through the API: plant it as older versions stored it.
    await t.server.ctx.db.query(`UPDATE tables SET columns = jsonb_set(columns, '{0,unique}', 'true') WHERE id = $1`, [id]);
    await t.server.ctx.db.exec(columnIndexes(id, { name: 'tier', type: 'select', required: false, unique: true }).unique!.sql);
    expect((await patch(id, 'tier', { name: 'level' })).status).toBe(200);
    expect((await patch(id, 'level', { options: ['a', 'b', 'c'] })).status).toBe(200);
    const off = await patch(id, 'level', { unique: false });
    expect(off.status).toBe(200);
    expect(off.body.data.columns[0]).toMatchObject({ name: 'level', unique: false, options: ['a', 'b', 'c'].map((o) => ({ id: o, name: o })) });
    expect(await indexNames(id)).toEqual([]);
  });
});

describe('requests', () => {
  it('answers an unknown column with 404, an unknown or foreign table with 404', async () => {
    const id = await c.createTable(uniqueName('unknown'), people);
    const before = await state(id);
    for (const r of [await patch(id, 'nope', { name: 'x' }), await remove(id, 'nope'), await patch(id, 'EMAIL', { required: false })]) {
      expect(r.status).toBe(404);
      expect(r.body.error).toMatch(/^Column "(nope|EMAIL)" not found$/);
    }
    expect(await state(id)).toEqual(before);
    const other = await otherWorkspace(t, 'team');
    const foreign = await other.createTable('theirs', people);
    for (const r of [await patch(foreign, 'email', { name: 'x' }), await remove(foreign, 'email'), await patch('tbl_00000000000000000000000000000000', 'email', { name: 'x' })]) {
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: 'Table not found' });
    }
    expect((await other.table(foreign)).schema.columns.map((x: { name: string }) => x.name)).toEqual(['email', 'age', 'born', 'note']);
  });

  it('takes a strict body that changes something', async () => {
    const id = await c.createTable(uniqueName('strict'), people);
    await c.insert(id, { email: 'a@x', age: 1 });
    const before = await state(id);
    const bodies: Record<string, unknown>[] = [
      { workspaceId: c.workspaceId, columnName: 'age', updates: {} },
      { workspaceId: c.workspaceId, columnName: 'age', updates: { name: 'x', colour: 'red' } },
      { workspaceId: c.workspaceId, columnName: 'age', updates: { name: 'x' }, extra: true },
      { workspaceId: c.workspaceId, columnName: 'age' },
      { workspaceId: c.workspaceId, updates: { name: 'x' } },
      { workspaceId: c.workspaceId, columnName: 'age', updates: { required: 'yes' } },
      { columnName: 'age', updates: { name: 'x' } },
    ];
    for (const body of bodies) {
      const r = await c.call('PATCH', `/api/v1/tables/${id}/columns`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(typeof r.body.error).toBe('string');
    }
    expect(await state(id)).toEqual(before);
    // A change to what the column already is answers the columns and writes nothing.
    const same = await patch(id, 'age', { name: 'age', type: 'number' });
    expect(same.status).toBe(200);
    expect(await state(id)).toEqual(before);
  });

  it('records audit entries for column changes and deletions', async () => {
    const id = await c.createTable(uniqueName('audited'), people);
    await c.insert(id, { email: 'a@x', age: 1 });
    const ageId = (await c.table(id)).schema.columns[1].id;
    await patch(id, 'age', { name: 'years', type: 'string' });
    await remove(id, 'years');
    const audit = await t.server.ctx.db.query<{ action: string; resource_type: string; metadata: Record<string, unknown> }>(
      'SELECT action, resource_type, metadata FROM audit_logs WHERE resource_id = $1 ORDER BY created_at, action', [id]);
    expect(audit.map((a) => a.action)).toEqual(['table.created', 'table.column_updated', 'table.column_deleted']);
    expect(audit[1]).toMatchObject({
      resource_type: 'table',
      metadata: { columnId: ageId, column: 'age', changes: { name: { from: 'age', to: 'years' }, type: { from: 'number', to: 'string' } }, rowsRewritten: 2 },
    });
    expect(audit[2].metadata).toMatchObject({ columnId: ageId, column: 'years', rowsRewritten: 1 });
  });

  it('refuses a change that would take a row past the row size limit', async () => {
    const id = await c.createTable(uniqueName('nearcap'), [{ name: 'j', type: 'json' }, { name: 'n', type: 'number' }]);
    // Stored as {"j": "xxx...", "n": 1}: 17 bytes around the text.
    const r = await c.insert(id, { j: 'x'.repeat(409_600 - 17), n: 1 });
    expect(r.status, r.text).toBe(200);
    expect((await bytesOf(id)).actual).toBe(409_600);
    const before = await state(id);
    const longer = await patch(id, 'n', { name: 'n_longer' });
    expect(longer.status).toBe(400);
    expect(longer.body.error).toMatch(/row size limit \(409607 bytes > 409600 bytes\)/);
    expect(await state(id)).toEqual(before);
  });
});

describe('delete', () => {
  it('removes the column, its value from every row and its indexes, and keeps the counters right', async () => {
    const id = await c.createTable(uniqueName('del'), people);
    await c.insertMany(id, [{ email: 'a@x', age: 3, born: '2020-01-01' }, { email: 'b@x', note: 'n' }]);
    const columns = (await c.table(id)).schema.columns as Columns;
    const r = await remove(id, 'age');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { columns: [columns[0], columns[2], columns[3]] } });
    expect(await c.all(id)).toEqual([{ email: 'a@x', born: '2020-01-01' }, { email: 'b@x', note: 'n' }]);
    const indexes = await indexNames(id);
    for (const name of expectedIndexes(id, { name: 'age', type: 'number' })) expect(indexes).not.toContain(name);
    expect(indexes).toHaveLength(2);
    const counters = await bytesOf(id);
    expect(counters.counter).toBe(counters.actual);
    expect((await c.table(id)).rowCount).toBe(2);

    const unique = await remove(id, 'email');
    expect(unique.status).toBe(200);
    expect(await indexNames(id)).toEqual(expectedIndexes(id, { name: 'born', type: 'date' }));
    // The name is free again, for a new column (a new id) of any type.
    const again = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'age', type: 'date' } });
    expect(again.status).toBe(200);
    expect(again.body.data.columns.find((x: { name: string }) => x.name === 'age').id).not.toBe(columns[1].id);
    expect((await c.insert(id, { age: 'Jan 2, 2024' })).status).toBe(200);
    const q = await c.query(id, { filter: { age: { $gt: '2024-01-01' } } });
    expect(q.body.data.rows.map((x: { data: unknown }) => x.data)).toEqual([{ age: '2024-01-02' }]);
  });

  it('refuses to delete the last column', async () => {
    const id = await c.createTable(uniqueName('last'), [{ name: 'only', type: 'string' }]);
    await c.insert(id, { only: 'x' });
    const before = await state(id);
    const r = await remove(id, 'only');
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'Cannot delete the last column in a table' });
    expect(await state(id)).toEqual(before);
  });

  it('takes workspaceId from the query too', async () => {
    const id = await c.createTable(uniqueName('delq'), people);
    const r = await c.call('DELETE', `/api/v1/tables/${id}/columns?workspaceId=${c.workspaceId}`, { columnName: 'note' });
    expect(r.status).toBe(200);
    expect(r.body.data.columns).toHaveLength(3);
  });
});

describe('column ids', () => {
  it('answers a stable id for columns stored before ids existed, and stores it with the next schema change', async () => {
    const id = await c.createTable(uniqueName('legacyids'), people);
    await c.insert(id, { email: 'a@x', age: 1 });
    await t.server.ctx.db.query(
      "UPDATE tables SET columns = (SELECT jsonb_agg(col - 'id' ORDER BY n) FROM jsonb_array_elements(columns) WITH ORDINALITY AS e(col, n)) WHERE id = $1", [id]);
    const first = (await c.table(id)).schema.columns as Columns;
    expect(first.map((x) => x.id)).toEqual(people.map((p) => derivedColumnId(id, p.name)));
    for (const x of first) expect(x.id).toMatch(COLUMN_ID);
    expect((await c.table(id)).schema.columns).toEqual(first);
    const listed = (await c.call('GET', `/api/v1/tables?workspaceId=${c.workspaceId}`)).body.data.tables.find((x: { id: string }) => x.id === id);
    expect(listed.schema.columns).toEqual(first);

    const r = await patch(id, first[1].id, { name: 'years' });
    expect(r.status).toBe(200);
    expect(r.body.data.columns.map((x: { id: string }) => x.id)).toEqual(first.map((x) => x.id));
    expect((await c.table(id)).schema.columns[1]).toEqual({ ...first[1], name: 'years' });
    const stored = await t.server.ctx.db.query<{ ids: string[] }>(
      "SELECT array_agg(e.col->>'id' ORDER BY e.n) AS ids FROM tables x, jsonb_array_elements(x.columns) WITH ORDINALITY AS e(col, n) WHERE x.id = $1", [id]);
    expect(stored[0].ids).toEqual(first.map((x) => x.id));
  });

  it('takes a column id as the upsert conflictTarget', async () => {
    const id = await c.createTable(uniqueName('upsertid'), people);
    const emailId = (await c.table(id)).schema.columns[0].id;
    const up = (age: number) => c.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: c.workspaceId, data: { email: 'a@x', age }, conflictTarget: emailId });
    expect((await up(1)).body.data.operation).toBe('insert');
    const second = await up(2);
    expect(second.body.data.operation).toBe('update');
    expect(second.body.data.row.data).toEqual({ email: 'a@x', age: 2 });
    const ageId = (await c.table(id)).schema.columns[1].id;
    const notUnique = await c.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: c.workspaceId, data: { email: 'a@x', age: 3 }, conflictTarget: ageId });
    expect(notUnique.status).toBe(400);
    expect(notUnique.body.error).toMatch(/^conflictTarget "age" is not a unique column/);
  });
});
