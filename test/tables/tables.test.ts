import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey } from '../support/accounts.js';
import { insertUser } from '../../src/accounts/store.js';
import { tableStorageBytes } from '../../src/tables/service.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

let t: TestServer;
let c: TablesClient;
beforeAll(async () => {
  t = await startTestServer();
  c = await otherWorkspace(t, 'team');
});
afterAll(async () => {
  await t?.close();
});

const cols = [
  { name: 'email', type: 'string', required: true, unique: true },
  { name: 'age', type: 'number' },
];
const COLUMN_ID = expect.stringMatching(/^col_[0-9a-f]{32}$/);

describe('create, list, get, delete', () => {
  it('creates a table with the documented shape and lists and gets it', async () => {
    const name = uniqueName('contacts');
    const r = await c.call('POST', '/api/v1/tables', {
      workspaceId: c.workspaceId, name, description: 'People we know',
      schema: { columns: [...cols, { name: 'tier', type: 'select', options: ['gold', 'silver'] }, { name: 'flag', type: 'boolean', required: false }] },
    });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data.message).toBe('Table created successfully');
    const table = r.body.data.table;
    expect(table.id).toMatch(/^tbl_[0-9a-f]{32}$/);
    expect(table).toMatchObject({ name, description: 'People we know', rowCount: 0, maxRows: 500_000 });
    expect(table.schema.columns).toEqual([
      { id: COLUMN_ID, name: 'email', type: 'string', required: true, unique: true },
      { id: COLUMN_ID, name: 'age', type: 'number', required: false, unique: false },
      { id: COLUMN_ID, name: 'tier', type: 'select', required: false, unique: false, options: [{ id: 'gold', name: 'gold' }, { id: 'silver', name: 'silver' }], multiple: false },
      { id: COLUMN_ID, name: 'flag', type: 'boolean', required: false, unique: false },
    ]);
    expect(new Set(table.schema.columns.map((x: { id: string }) => x.id)).size).toBe(4);
    expect(new Date(table.createdAt).toISOString()).toBe(table.createdAt);
    expect(new Date(table.updatedAt).toISOString()).toBe(table.updatedAt);

    const got = await c.call('GET', `/api/v1/tables/${table.id}?workspaceId=${c.workspaceId}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ success: true, data: { table } });

    const list = await c.call('GET', `/api/v1/tables?workspaceId=${c.workspaceId}`);
    expect(list.status).toBe(200);
    expect(list.body.data.totalCount).toBe(list.body.data.tables.length);
    expect(list.body.data.tables.map((x: { id: string }) => x.id)).toContain(table.id);
  });

  it('defaults description to an empty string and required/unique to false', async () => {
    const r = await c.call('POST', '/api/v1/tables', { workspaceId: c.workspaceId, name: uniqueName('plain'), schema: { columns: [{ name: 'a', type: 'string' }] } });
    expect(r.status).toBe(200);
    expect(r.body.data.table.description).toBe('');
    expect(r.body.data.table.schema.columns[0]).toEqual({ id: COLUMN_ID, name: 'a', type: 'string', required: false, unique: false });
  });

  it('refuses a duplicate table name with 400 and writes nothing', async () => {
    const name = uniqueName('dup');
    await c.createTable(name, cols);
    const before = (await c.call('GET', `/api/v1/tables?workspaceId=${c.workspaceId}`)).body.data.totalCount;
    const r = await c.call('POST', '/api/v1/tables', { workspaceId: c.workspaceId, name, schema: { columns: cols } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(`A table named "${name}" already exists in this workspace`);
    expect((await c.call('GET', `/api/v1/tables?workspaceId=${c.workspaceId}`)).body.data.totalCount).toBe(before);
  });

  it.each([
    ['bad table name', { name: '1abc', schema: { columns: cols } }, /table name/i],
    ['table name with a dash', { name: 'a-b', schema: { columns: cols } }, /table name/i],
    ['no columns', { name: 'x', schema: { columns: [] } }, /.+/],
    ['missing schema', { name: 'x' }, /schema/],
    ['unknown type', { name: 'x', schema: { columns: [{ name: 'a', type: 'money' }] } }, /type/],
    ['bad column name', { name: 'x', schema: { columns: [{ name: 'a b', type: 'string' }] } }, /column name/i],
    ['reserved column name', { name: 'x', schema: { columns: [{ name: 'createdAt', type: 'date' }] } }, /reserved/],
    ['duplicate column (case-insensitive)', { name: 'x', schema: { columns: [{ name: 'a', type: 'string' }, { name: 'A', type: 'number' }] } }, /duplicate column/i],
    ['select without options', { name: 'x', schema: { columns: [{ name: 's', type: 'select' }] } }, /option/],
    ['options on a string column', { name: 'x', schema: { columns: [{ name: 's', type: 'string', options: ['a'] }] } }, /options are only allowed/],
    ['duplicate options', { name: 'x', schema: { columns: [{ name: 's', type: 'select', options: ['a', 'A'] }] } }, /duplicate option/],
    ['1001 columns', { name: 'x', schema: { columns: Array.from({ length: 1001 }, (_, i) => ({ name: `c${i}`, type: 'string' })) } }, /.+/],
    ['a unique select column', { name: 'x', schema: { columns: [{ name: 's', type: 'select', options: ['a'], unique: true }] } }, /^Select column "s" cannot be unique$/],
    ['51 unique columns', { name: 'x', schema: { columns: Array.from({ length: 51 }, (_, i) => ({ name: `c${i}`, type: 'string', unique: true })) } }, /at most 50 unique columns/],
    ['required as a string', { name: 'x', schema: { columns: [{ name: 'a', type: 'string', required: 'yes' }] } }, /.+/],
    ['name too long', { name: 'a'.repeat(129), schema: { columns: cols } }, /.+/],
  ])('refuses %s with 400', async (_label, body, message) => {
    const before = (await c.call('GET', `/api/v1/tables?workspaceId=${c.workspaceId}`)).body.data.totalCount;
    const r = await c.call('POST', '/api/v1/tables', { workspaceId: c.workspaceId, ...body });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(message);
    expect((await c.call('GET', `/api/v1/tables?workspaceId=${c.workspaceId}`)).body.data.totalCount).toBe(before);
  });

  it('deletes a table with its rows and unique indexes, and records audit events', async () => {
    const name = uniqueName('gone');
    const id = await c.createTable(name, [...cols, { name: 'at', type: 'date' }]);
    expect((await c.insertMany(id, [{ email: 'a@x', age: 1 }, { email: 'b@x' }])).status).toBe(200);
    const idx = () => t.server.ctx.db.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE indexname LIKE $1", [`t${id.slice(4)}%`]);
    expect((await idx()).length).toBe(3); // unique email, typed age, typed at
    const del = await c.call('DELETE', `/api/v1/tables/${id}?workspaceId=${c.workspaceId}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true, data: { message: 'Table deleted successfully' } });
    expect((await c.call('GET', `/api/v1/tables/${id}?workspaceId=${c.workspaceId}`)).status).toBe(404);
    expect((await c.query(id)).status).toBe(404);
    const rows = await t.server.ctx.db.query('SELECT 1 FROM table_rows WHERE table_id = $1', [id]);
    expect(rows.length).toBe(0);
    expect((await idx()).length).toBe(0);
    const again = await c.call('DELETE', `/api/v1/tables/${id}`, { workspaceId: c.workspaceId });
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ error: 'Table not found' });

    const audit = await t.server.ctx.db.query<{ action: string; resource_name: string }>(
      "SELECT action, resource_name FROM audit_logs WHERE resource_id = $1 ORDER BY created_at", [id]);
    expect(audit.map((a) => a.action)).toEqual(['table.created', 'table.deleted']);
    expect(audit[0].resource_name).toBe(name);
  });

  it('takes workspaceId of a DELETE from the body too, and needs it somewhere', async () => {
    const id = await c.createTable(uniqueName('delbody'), cols);
    const none = await c.call('DELETE', `/api/v1/tables/${id}`);
    expect(none.status).toBe(400);
    const ok = await c.call('DELETE', `/api/v1/tables/${id}`, { workspaceId: c.workspaceId });
    expect(ok.status).toBe(200);
  });
});

describe('columns', () => {
  it('adds a column and returns the full list; refuses clashes', async () => {
    const id = await c.createTable(uniqueName('addcol'), cols);
    const created = (await c.table(id)).schema.columns;
    const r = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'city', type: 'string' } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: {
        columns: [
          { id: created[0].id, name: 'email', type: 'string', required: true, unique: true },
          { id: created[1].id, name: 'age', type: 'number', required: false, unique: false },
          { id: COLUMN_ID, name: 'city', type: 'string', required: false, unique: false },
        ],
      },
    });
    expect((await c.table(id)).schema.columns).toEqual(r.body.data.columns);
    const first = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'rank', type: 'number', position: 0 } });
    expect(first.body.data.columns[0].name).toBe('rank');
    const clash = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'CITY', type: 'string' } });
    expect(clash.status).toBe(400);
    expect(clash.body.error).toBe('Column "CITY" already exists');
    const badType = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'z', type: 'nope' } });
    expect(badType.status).toBe(400);
    const uniqueSelect = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'z', type: 'select', options: ['a'], unique: true } });
    expect(uniqueSelect.status).toBe(400);
    expect(uniqueSelect.body.error).toBe('Select column "z" cannot be unique');
    expect((await c.table(id)).schema.columns).toHaveLength(4);
  });

  it('refuses a required column on a table with rows, accepts it on an empty table', async () => {
    const id = await c.createTable(uniqueName('reqcol'), cols);
    const empty = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'must', type: 'string', required: true } });
    expect(empty.status).toBe(200);
    expect((await c.insert(id, { email: 'a@x', must: 'yes' })).status).toBe(200);
    const r = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'must2', type: 'string', required: true } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/Cannot add required column "must2"/);
    expect((await c.table(id)).schema.columns.map((x: { name: string }) => x.name)).toEqual(['email', 'age', 'must']);
  });

  it('a unique column added later is enforced by the database', async () => {
    const id = await c.createTable(uniqueName('uniqlater'), cols);
    await c.insert(id, { email: 'a@x' });
    const r = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'code', type: 'string', unique: true } });
    expect(r.status).toBe(200);
    expect((await c.insert(id, { email: 'b@x', code: 'X1' })).status).toBe(200);
    const dup = await c.insert(id, { email: 'c@x', code: 'X1' });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ column: 'code', value: 'X1' });
  });

  it('refuses a unique column when existing rows hold duplicates (409) and keeps the schema', async () => {
    const id = await c.createTable(uniqueName('uniqdup'), cols);
    await c.insertMany(id, [{ email: 'a@x' }, { email: 'b@x' }]);
    // Rows can only hold values of existing columns, so plant duplicate values directly.
    await t.server.ctx.db.query(`UPDATE table_rows SET data = data || '{"code": "same"}'::jsonb WHERE table_id = $1`, [id]);
    const r = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'code', type: 'string', unique: true } });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/Cannot make column "code" unique/);
    expect((await c.table(id)).schema.columns.map((x: { name: string }) => x.name)).toEqual(['email', 'age']);
  });

  it('caps columns at 1000', async () => {
    const id = await c.createTable(uniqueName('wide'), Array.from({ length: 1000 }, (_, i) => ({ name: `c${i}`, type: 'string' })));
    const r = await c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'one_more', type: 'string' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/maximum of 1000 columns/);
    expect((await c.table(id)).schema.columns).toHaveLength(1000);
  });

  it('gives typed indexes to the first 50 number and date columns, and caps unique columns at 50', async () => {
    const id = await c.createTable(uniqueName('indexed'), [
      ...Array.from({ length: 40 }, (_, i) => ({ name: `n${i}`, type: 'number' })),
      ...Array.from({ length: 20 }, (_, i) => ({ name: `d${i}`, type: 'date' })),
      ...Array.from({ length: 49 }, (_, i) => ({ name: `u${i}`, type: 'string', unique: true })),
    ]);
    const indexes = async (kind: 'u' | 'x') => (await t.server.ctx.db.query('SELECT 1 FROM pg_indexes WHERE indexname LIKE $1', [`t${id.slice(4)}\\_${kind}\\_%`])).length;
    expect(await indexes('x')).toBe(50);
    expect(await indexes('u')).toBe(49);
    // Past the typed indexes a number column has none of its own, and still filters and sorts.
    const add = (column: Record<string, unknown>) => c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column });
    expect((await add({ name: 'late', type: 'number' })).status).toBe(200);
    expect(await indexes('x')).toBe(50);
    expect((await c.insertMany(id, [{ late: 2 }, { late: 1 }])).status).toBe(200);
    const q = await c.query(id, { filter: { late: { $gte: 1 } }, sort: { late: 'asc' } });
    expect(q.body.data.rows.map((r: { data: { late: number } }) => r.data.late)).toEqual([1, 2]);
    expect((await add({ name: 'u49', type: 'number', unique: true })).status).toBe(200);
    const tooMany = await add({ name: 'u50', type: 'string', unique: true });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toBe('A table can have at most 50 unique columns');
    expect(await indexes('u')).toBe(50);
  });
});

describe('plan limits', () => {
  it('caps tables per workspace by plan (free: 5) with 403, also under concurrency', async () => {
    const free = await otherWorkspace(t, 'free');
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) =>
      free.call('POST', '/api/v1/tables', { workspaceId: free.workspaceId, name: `t${i}`, schema: { columns: cols } })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(3);
    for (const r of refused) {
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ error: 'Workspace has reached maximum table limit (5)' });
    }
    const list = await free.call('GET', `/api/v1/tables?workspaceId=${free.workspaceId}`);
    expect(list.body.data.totalCount).toBe(5);
    expect(list.body.data.tables[0].maxRows).toBe(50_000);
  });

  it('reports maxRows of the plan: pro 100,000, enterprise 1,000,000', async () => {
    const pro = await otherWorkspace(t, 'pro');
    const ent = await otherWorkspace(t, 'enterprise');
    const p = await pro.table(await pro.createTable('a', cols));
    const e = await ent.table(await ent.createTable('a', cols));
    expect(p.maxRows).toBe(100_000);
    expect(e.maxRows).toBe(1_000_000);
  });
});

describe('access', () => {
  it('answers a table of another workspace exactly like a missing one on every route', async () => {
    const other = await otherWorkspace(t, 'team');
    const foreign = await other.createTable('secret', cols);
    const row = (await other.insert(foreign, { email: 'x@y' })).body.data.row.id;
    const ws = c.workspaceId;
    const missing = 'tbl_00000000000000000000000000000000';
    for (const id of [foreign, missing, 'not-a-table-id']) {
      const calls: [string, string, unknown?][] = [
        ['GET', `/api/v1/tables/${id}?workspaceId=${ws}`],
        ['DELETE', `/api/v1/tables/${id}?workspaceId=${ws}`],
        ['POST', `/api/v1/tables/${id}/columns`, { workspaceId: ws, column: { name: 'z', type: 'string' } }],
        ['PATCH', `/api/v1/tables/${id}/columns`, { workspaceId: ws, columnName: 'email', updates: { name: 'mail' } }],
        ['DELETE', `/api/v1/tables/${id}/columns`, { workspaceId: ws, columnName: 'email' }],
        ['GET', `/api/v1/tables/${id}/rows?workspaceId=${ws}`],
        ['POST', `/api/v1/tables/${id}/rows`, { workspaceId: ws, data: { email: 'q@q' } }],
        ['PUT', `/api/v1/tables/${id}/rows`, { workspaceId: ws, filter: { email: 'x@y' }, data: { age: 1 } }],
        ['PATCH', `/api/v1/tables/${id}/rows`, { workspaceId: ws, updates: [{ rowId: row, data: { age: 1 } }] }],
        ['DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: ws, rowIds: [row] }],
        ['GET', `/api/v1/tables/${id}/rows/${row}?workspaceId=${ws}`],
        ['PATCH', `/api/v1/tables/${id}/rows/${row}`, { workspaceId: ws, data: { age: 1 } }],
        ['DELETE', `/api/v1/tables/${id}/rows/${row}?workspaceId=${ws}`],
        ['POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: ws, data: { email: 'x@y' } }],
      ];
      for (const [method, path, body] of calls) {
        const r = await c.call(method, path, body);
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(r.body, `${method} ${path}`).toEqual({ error: 'Table not found' });
      }
    }
    const still = await other.query(foreign);
    expect(still.body.data.rows).toHaveLength(1);
    expect(still.body.data.rows[0].data).toEqual({ email: 'x@y' });
    expect((await other.table(foreign)).schema.columns.map((x: { name: string }) => x.name)).toEqual(['email', 'age']);
  });

  it('refuses a workspace key on another workspace (403) and a read-only member on writes (403)', async () => {
    const other = await otherWorkspace(t, 'team');
    const r = await c.call('GET', `/api/v1/tables?workspaceId=${other.workspaceId}`);
    expect(r.status).toBe(403);

    const id = await c.createTable(uniqueName('ro'), cols);
    const u = await insertUser(t.server.ctx.db, { id: crypto.randomUUID(), email: `ro${Date.now()}@x`, name: 'Reader', isAdmin: false, plan: 'team' });
    await addMember(t.server.ctx.db, c.workspaceId, u.id, 'read');
    const k = await createKey(t.server.ctx.db, { workspaceId: c.workspaceId, userId: u.id, type: 'personal' });
    const reader = new TablesClient(t, c.workspaceId, k.secret);
    expect((await reader.query(id)).status).toBe(200);
    expect((await reader.call('GET', `/api/v1/tables/${id}?workspaceId=${c.workspaceId}`)).status).toBe(200);
    const w = await reader.insert(id, { email: 'a@x' });
    expect(w.status).toBe(403);
    expect(w.body).toEqual({ error: 'Access denied' });
    expect((await reader.call('DELETE', `/api/v1/tables/${id}?workspaceId=${c.workspaceId}`)).status).toBe(403);
    expect((await reader.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'z', type: 'string' } })).status).toBe(403);
    expect((await reader.call('PATCH', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, columnName: 'age', updates: { name: 'z' } })).status).toBe(403);
    expect((await reader.call('DELETE', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, columnName: 'age' })).status).toBe(403);
    expect((await c.table(id)).schema.columns.map((x: { name: string }) => x.name)).toEqual(['email', 'age']);
    expect((await c.snapshot(id)).rows).toBe(0);
  });

  it('needs an API key', async () => {
    const r = await fetch(`${t.url}/api/v1/tables?workspaceId=${c.workspaceId}`);
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ error: 'API key required' });
  });

  it('publishes every route in the OpenAPI document under the tables tag', async () => {
    const doc = await c.call('GET', '/api/openapi.json');
    const paths = Object.entries(doc.body.paths as Record<string, Record<string, { tags?: string[]; summary?: string }>>)
      .filter(([p]) => p.startsWith('/api/v1/tables'));
    const ops = paths.flatMap(([p, item]) => Object.entries(item).map(([m, op]) => ({ op: `${m.toUpperCase()} ${p}`, ...op })));
    expect(ops.map((o) => o.op).sort()).toEqual([
      'DELETE /api/v1/tables/{tableId}', 'DELETE /api/v1/tables/{tableId}/columns', 'DELETE /api/v1/tables/{tableId}/rows', 'DELETE /api/v1/tables/{tableId}/rows/{rowId}',
      'GET /api/v1/tables', 'GET /api/v1/tables/{tableId}', 'GET /api/v1/tables/{tableId}/rows', 'GET /api/v1/tables/{tableId}/rows/{rowId}',
      'PATCH /api/v1/tables/{tableId}', 'PATCH /api/v1/tables/{tableId}/columns', 'PATCH /api/v1/tables/{tableId}/rows', 'PATCH /api/v1/tables/{tableId}/rows/{rowId}',
      'POST /api/v1/tables', 'POST /api/v1/tables/{tableId}/columns', 'POST /api/v1/tables/{tableId}/rows', 'POST /api/v1/tables/{tableId}/rows/upsert',
      'PUT /api/v1/tables/{tableId}/rows',
    ]);
    for (const o of ops) {
      expect(o.tags, o.op).toEqual(['tables']);
      expect(o.summary, o.op).toBeTruthy();
    }
  });
});

describe('storage', () => {
  it('tracks row bytes per workspace through inserts, updates and deletes', async () => {
    const ws = await otherWorkspace(t, 'team');
    const db = t.server.ctx.db;
    // Tables' share of the storage sum, as the limits area reads it.
    const tableBytes = async (workspaceId: string) => (await db.query<{ n: number }>(`SELECT (${tableStorageBytes.sql})::float8 AS n`, [workspaceId]))[0]?.n;
    expect(await tableBytes(ws.workspaceId)).toBe(0);
    const a = await ws.createTable('a', cols);
    const b = await ws.createTable('b', [{ name: 'blob', type: 'json' }]);
    const actual = async () => (await db.query<{ n: number }>(
      'SELECT COALESCE(sum(octet_length(r.data::text)), 0)::int AS n FROM table_rows r JOIN tables t ON t.id = r.table_id WHERE t.workspace_id = $1',
      [ws.workspaceId],
    ))[0].n;
    const ids = (await ws.insertMany(a, [{ email: 'a@x', age: 1 }, { email: 'b@x' }, { email: 'c@x' }])).body.data.rows.map((r: { id: string }) => r.id);
    await ws.insert(b, { blob: { text: 'x'.repeat(5000) } });
    expect(await tableBytes(ws.workspaceId)).toBe(await actual());
    expect(await tableBytes(ws.workspaceId)).toBeGreaterThan(5000);
    await ws.call('PATCH', `/api/v1/tables/${a}/rows/${ids[0]}`, { workspaceId: ws.workspaceId, data: { age: 123456789 } });
    await ws.call('PUT', `/api/v1/tables/${a}/rows`, { workspaceId: ws.workspaceId, filter: { email: { $in: ['b@x', 'c@x'] } }, data: { age: 7 } });
    await ws.call('PATCH', `/api/v1/tables/${a}/rows`, { workspaceId: ws.workspaceId, updates: [{ rowId: ids[1], data: { age: null } }] });
    expect(await tableBytes(ws.workspaceId)).toBe(await actual());
    await ws.call('DELETE', `/api/v1/tables/${a}/rows`, { workspaceId: ws.workspaceId, rowIds: [ids[2]] });
    await ws.call('DELETE', `/api/v1/tables/${a}/rows/${ids[1]}?workspaceId=${ws.workspaceId}`);
    expect(await tableBytes(ws.workspaceId)).toBe(await actual());
    await ws.call('DELETE', `/api/v1/tables/${b}?workspaceId=${ws.workspaceId}`);
    expect(await tableBytes(ws.workspaceId)).toBe(await actual());
    expect(await tableBytes(ws.workspaceId)).toBeLessThan(200);
  });
});
