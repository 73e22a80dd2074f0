import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

let t: TestServer;
let c: TablesClient;
beforeAll(async () => {
  t = await startTestServer();
  c = await otherWorkspace(t, 'enterprise');
});
afterAll(async () => {
  await t?.close();
});

const allTypes = [
  { name: 's', type: 'string' },
  { name: 'n', type: 'number' },
  { name: 'b', type: 'boolean' },
  { name: 'd', type: 'date' },
  { name: 'j', type: 'json' },
  { name: 'sel', type: 'select', options: ['Gold', 'Silver'] },
];
const people = [
  { name: 'email', type: 'string', required: true, unique: true },
  { name: 'name', type: 'string' },
  { name: 'age', type: 'number' },
];

const ROW_ID = /^row_[0-9a-f]{32}$/;

describe('insert', () => {
  it('inserts one row with the documented shape and counts it', async () => {
    const id = await c.createTable(uniqueName('one'), people);
    const r = await c.insert(id, { email: 'a@x', name: 'Ann', age: 30 });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data.message).toBe('Row inserted successfully');
    const row = r.body.data.row;
    expect(row.id).toMatch(ROW_ID);
    expect(row.data).toEqual({ email: 'a@x', name: 'Ann', age: 30 });
    expect(Object.keys(row.data)).toEqual(['email', 'name', 'age']);
    expect(row.position).toBe(0);
    expect(new Date(row.createdAt).toISOString()).toBe(row.createdAt);
    expect(new Date(row.updatedAt).toISOString()).toBe(row.updatedAt);
    expect((await c.table(id)).rowCount).toBe(1);
  });

  it('inserts a batch in order at consecutive positions', async () => {
    const id = await c.createTable(uniqueName('batch'), people);
    await c.insert(id, { email: 'first@x' });
    const rows = Array.from({ length: 25 }, (_, i) => ({ email: `u${i}@x`, age: i }));
    const r = await c.insertMany(id, rows);
    expect(r.status).toBe(200);
    expect(r.body.data.insertedCount).toBe(25);
    expect(r.body.data.message).toBe('Successfully inserted 25 rows');
    expect(r.body.data.rows.map((x: { data: unknown }) => x.data)).toEqual(rows);
    expect(r.body.data.rows.map((x: { position: number }) => x.position)).toEqual(rows.map((_, i) => i + 1));
    expect(new Set(r.body.data.rows.map((x: { id: string }) => x.id)).size).toBe(25);
    expect((await c.table(id)).rowCount).toBe(26);
  });

  it('prefers rows over data when both are given, and needs one of them', async () => {
    const id = await c.createTable(uniqueName('both'), people);
    const r = await c.call('POST', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, data: { email: 'd@x' }, rows: [{ email: 'r@x' }] });
    expect(r.body.data.insertedCount).toBe(1);
    expect(r.body.data.rows[0].data.email).toBe('r@x');
    const none = await c.call('POST', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId });
    expect(none.status).toBe(400);
    expect((await c.call('POST', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, rows: [] })).status).toBe(400);
    const tooMany = await c.call('POST', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, rows: Array.from({ length: 1001 }, (_, i) => ({ email: `${i}` })) });
    expect(tooMany.status).toBe(400);
    expect((await c.snapshot(id)).rows).toBe(1);
  });
});

describe('column types: coercion', () => {
  let id: string;
  beforeAll(async () => {
    id = await c.createTable(uniqueName('types'), allTypes);
  });
  const cases: [string, unknown, unknown][] = [
    ['s', 'text', 'text'],
    ['s', 42, '42'],
    ['s', 1.5, '1.5'],
    ['s', true, 'true'],
    ['s', '', ''],
    ['s', 'ünïcødé 😀', 'ünïcødé 😀'],
    ['n', 42, 42],
    ['n', -1.25, -1.25],
    ['n', '31', 31],
    ['n', ' 2.5e3 ', 2500],
    ['n', '-0.5', -0.5],
    ['n', 0, 0],
    ['b', true, true],
    ['b', false, false],
    ['b', 'true', true],
    ['b', ' FALSE ', false],
    ['d', '2024-02-29', '2024-02-29'],
    ['d', '2024-03-01T10:20:30Z', '2024-03-01T10:20:30.000Z'],
    ['d', '2024-03-01T10:20:30.123456Z', '2024-03-01T10:20:30.123Z'],
    ['d', '2024-03-01T10:20:30+02:00', '2024-03-01T08:20:30.000Z'],
    ['d', '2024-03-01 10:20', '2024-03-01T10:20:00.000Z'],
    ['d', 'Fri, 01 Mar 2024 10:20:30 GMT', '2024-03-01T10:20:30.000Z'],
    ['d', 1709288430000, '2024-03-01T10:20:30.000Z'],
    // Any string Date.parse reads, as in the reference: without a time of day, a calendar date.
    ['d', '2024/01/15', '2024-01-15'],
    ['d', 'Jan 15, 2024', '2024-01-15'],
    ['d', '01/15/2024', '2024-01-15'],
    ['d', 'January 15, 2024 3:04:05 PM', '2024-01-15T15:04:05.000Z'],
    ['d', 'Mon Jan 15 2024 10:30:00 GMT+0100', '2024-01-15T09:30:00.000Z'],
    ['j', { a: [1, { b: null }] }, { a: [1, { b: null }] }],
    ['j', [1, 'two'], [1, 'two']],
    ['j', 'str', 'str'],
    ['j', 7, 7],
    ['j', false, false],
    ['sel', 'Gold', 'Gold'],
    ['sel', 'silver', 'Silver'],
    ['sel', ' GOLD ', 'Gold'],
  ];
  it.each(cases)('%s <- %j stores %j', async (col, input, stored) => {
    const r = await c.insert(id, { [col]: input });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.row.data).toEqual({ [col]: stored });
    const back = await c.call('GET', `/api/v1/tables/${id}/rows/${r.body.data.row.id}?workspaceId=${c.workspaceId}`);
    expect(back.body.data.row.data).toEqual({ [col]: stored });
  });

  it('null clears a cell: it is not stored', async () => {
    const r = await c.insert(id, { s: null, n: 1 });
    expect(r.body.data.row.data).toEqual({ n: 1 });
  });
});

describe('column types: rejection', () => {
  let id: string;
  beforeAll(async () => {
    id = await c.createTable(uniqueName('reject'), allTypes);
  });
  const cases: [string, unknown][] = [
    ['s', { a: 1 }],
    ['s', [1]],
    ['s', 'nul\u0000char'],
    ['s', 'lone \ud800 surrogate'],
    ['n', 'abc'],
    ['n', ''],
    ['n', '0x10'],
    ['n', 'Infinity'],
    ['n', true],
    ['n', [1]],
    ['n', { v: 1 }],
    ['b', 'yes'],
    ['b', 1],
    ['b', 0],
    ['b', {}],
    ['d', 'not a date'],
    ['d', 'Feb 30, 2024'],
    ['d', '2023-02-29'],
    ['d', '2024-13-01'],
    ['d', '2024-04-31T10:00:00Z'],
    ['d', '2024-01-01T25:00:00Z'],
    ['d', '1'],
    ['d', true],
    ['d', { y: 2024 }],
    ['d', 1e20],
    ['j', { k: 'nul\u0000' }],
    ['sel', 'Bronze'],
    ['sel', true],
    ['sel', ['Gold']],
  ];
  it.each(cases.map(([col, input]) => [col, JSON.stringify(input).slice(0, 40), input] as const))('%s <- %s is a 400 naming the column, nothing written', async (col, _label, input) => {
    const before = await c.snapshot(id);
    const r = await c.insert(id, { [col]: input });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(`"${col}"`);
    expect(r.body.details[0]).toMatchObject({ path: ['data', col], column: col });
    expect(await c.snapshot(id)).toEqual(before);
  });

  it('reports every bad cell of a batch with its row index and writes nothing', async () => {
    const before = await c.snapshot(id);
    const r = await c.insertMany(id, [{ n: 1 }, { n: 'x' }, { b: 'maybe', s: 'ok' }]);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/^Row 1: .*"n"/);
    expect(r.body.details.map((d: { row: number; column: string }) => [d.row, d.column])).toEqual([[1, 'n'], [2, 'b']]);
    expect(r.body.details[1].path).toEqual(['rows', 2, 'b']);
    // What clients of the reference read of a batch's refusal: each entry's row and its errors.
    for (const d of r.body.details) expect(d.errors).toEqual([d.message]);
    expect(await c.snapshot(id)).toEqual(before);
  });

  it('refuses unknown columns (with a hint for a case mismatch) and writes nothing', async () => {
    const before = await c.snapshot(id);
    const r = await c.insert(id, { s: 'ok', nope: 1 });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('Unknown column "nope"');
    const hint = await c.insert(id, { S: 'x' });
    expect(hint.body.error).toBe('Unknown column "S" (did you mean "s"?)');
    expect(await c.snapshot(id)).toEqual(before);
  });

  it('refuses a row over 400 KiB and writes nothing; a text cell has no bound of its own', async () => {
    const big = await c.createTable(uniqueName('big'), [{ name: 'j', type: 'json' }, { name: 's', type: 'string' }]);
    const r = await c.insert(big, { j: { text: 'x'.repeat(410_000) } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/Row size exceeds limit \(\d+ bytes > 409600 bytes\)/);
    const ok = await c.insert(big, { j: { text: 'x'.repeat(300_000) } });
    expect(ok.status).toBe(200);
    const text = await c.insert(big, { s: 'y'.repeat(400_000) });
    expect(text.status).toBe(200);
    expect((text.body.data.row.data.s as string).length).toBe(400_000);
    const before = await c.snapshot(big);
    const viaPatch = await c.call('PATCH', `/api/v1/tables/${big}/rows/${ok.body.data.row.id}`, { workspaceId: c.workspaceId, data: { s: 'y'.repeat(110_000) } });
    expect(viaPatch.status).toBe(400);
    expect(viaPatch.body.error).toMatch(/Row size exceeds limit/);
    expect(await c.snapshot(big)).toEqual(before);
  });
});

describe('required', () => {
  it('refuses a missing or null required column on insert, and clearing it on update', async () => {
    const id = await c.createTable(uniqueName('req'), people);
    const missing = await c.insert(id, { name: 'No Email' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('Missing required field: email');
    const nul = await c.insert(id, { email: null });
    expect(nul.status).toBe(400);
    expect(nul.body.error).toBe('Missing required field: email');
    const ok = await c.insert(id, { email: 'e@x' });
    const rowId = ok.body.data.row.id;
    const clear = await c.call('PATCH', `/api/v1/tables/${id}/rows/${rowId}`, { workspaceId: c.workspaceId, data: { email: null } });
    expect(clear.status).toBe(400);
    const put = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { email: 'e@x' }, data: { email: null } });
    expect(put.status).toBe(400);
    // A patch without the required column keeps it.
    const patch = await c.call('PATCH', `/api/v1/tables/${id}/rows/${rowId}`, { workspaceId: c.workspaceId, data: { name: 'E' } });
    expect(patch.body.data.row.data).toEqual({ email: 'e@x', name: 'E' });
    expect((await c.snapshot(id)).rows).toBe(1);
  });
});

describe('unique (enforced by the database)', () => {
  it('refuses a duplicate with 409 naming column and value; nulls may repeat', async () => {
    const id = await c.createTable(uniqueName('uniq'), [...people, { name: 'code', type: 'number', unique: true }]);
    expect((await c.insert(id, { email: 'a@x', code: 1 })).status).toBe(200);
    const dup = await c.insert(id, { email: 'a@x' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ error: 'Column "email" must be unique: value "a@x" already exists', column: 'email', value: 'a@x' });
    const dupNum = await c.insert(id, { email: 'b@x', code: '1' });
    expect(dupNum.status).toBe(409);
    expect(dupNum.body).toMatchObject({ column: 'code', value: 1 });
    expect((await c.insert(id, { email: 'c@x' })).status).toBe(200);
    expect((await c.insert(id, { email: 'd@x', code: null })).status).toBe(200);
    expect((await c.table(id)).rowCount).toBe(3);
  });

  it('is case-sensitive for strings', async () => {
    const id = await c.createTable(uniqueName('case'), people);
    expect((await c.insert(id, { email: 'A@x' })).status).toBe(200);
    expect((await c.insert(id, { email: 'a@x' })).status).toBe(200);
  });

  it('compares dates as instants', async () => {
    const id = await c.createTable(uniqueName('udate'), [{ name: 'day', type: 'date', unique: true }]);
    expect((await c.insert(id, { day: '2024-05-01' })).status).toBe(200);
    const same = await c.insert(id, { day: '2024-05-01T00:00:00Z' });
    expect(same.status).toBe(409);
    expect(same.body).toMatchObject({ column: 'day', value: '2024-05-01T00:00:00.000Z' });
    const batch = await c.insertMany(id, [{ day: '2024-06-01' }, { day: '2024-05-01T02:00:00+02:00' }]);
    expect(batch.status).toBe(409);
    expect(batch.body).toMatchObject({ column: 'day', value: '2024-05-01T00:00:00.000Z' });
    expect((await c.snapshot(id)).rows).toBe(1);
  });

  it('refuses duplicates inside one batch and writes none of it', async () => {
    const id = await c.createTable(uniqueName('ubatch'), people);
    await c.insert(id, { email: 'keep@x' });
    const before = await c.snapshot(id);
    const r = await c.insertMany(id, [{ email: 'n1@x' }, { email: 'n2@x' }, { email: 'n1@x' }]);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ column: 'email', value: 'n1@x' });
    expect(await c.snapshot(id)).toEqual(before);
    const clash = await c.insertMany(id, [{ email: 'n3@x' }, { email: 'keep@x' }]);
    expect(clash.status).toBe(409);
    expect(clash.body).toMatchObject({ column: 'email', value: 'keep@x' });
    expect(await c.snapshot(id)).toEqual(before);
  });

  it('lets exactly one of many concurrent inserts of the same value succeed', async () => {
    const id = await c.createTable(uniqueName('race'), people);
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => c.insert(id, { email: `same${round}@x`, name: `n${i}` })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status === 409)).toHaveLength(11);
    }
    expect((await c.snapshot(id)).rows).toBe(3);
    expect((await c.table(id)).rowCount).toBe(3);
  });

  it('refuses updates that would duplicate a value (PATCH, PUT, batch PATCH) and writes nothing', async () => {
    const id = await c.createTable(uniqueName('uupd'), people);
    const rows = (await c.insertMany(id, [{ email: 'a@x' }, { email: 'b@x' }, { email: 'c@x' }])).body.data.rows;
    const before = await c.snapshot(id);
    const one = await c.call('PATCH', `/api/v1/tables/${id}/rows/${rows[1].id}`, { workspaceId: c.workspaceId, data: { email: 'a@x' } });
    expect(one.status).toBe(409);
    expect(one.body).toMatchObject({ column: 'email', value: 'a@x' });
    const many = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { email: { $ne: 'a@x' } }, data: { email: 'z@x' } });
    expect(many.status).toBe(409);
    const batch = await c.call('PATCH', `/api/v1/tables/${id}/rows`, {
      workspaceId: c.workspaceId, updates: [{ rowId: rows[0].id, data: { name: 'fine' } }, { rowId: rows[2].id, data: { email: 'b@x' } }],
    });
    expect(batch.status).toBe(409);
    expect(await c.snapshot(id)).toEqual(before);
    // Setting a row's unique value to itself is fine.
    const self = await c.call('PATCH', `/api/v1/tables/${id}/rows/${rows[0].id}`, { workspaceId: c.workspaceId, data: { email: 'a@x', name: 'A' } });
    expect(self.status).toBe(200);
  });
});

describe('schema changes racing row writes', () => {
  it('never leaves a row without a value for a required column', async () => {
    for (let round = 0; round < 5; round++) {
      const id = await c.createTable(uniqueName('racecol'), [{ name: 'a', type: 'string' }]);
      const [added, inserted] = await Promise.all([
        c.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, column: { name: 'must', type: 'string', required: true } }),
        c.insert(id, { a: 'x' }),
      ]);
      // Exactly one of the two wins: a row without "must", or a required "must" on an empty table.
      expect([added.status, inserted.status].sort()).toEqual([200, 400]);
      const rows = await c.all(id);
      const columns = (await c.table(id)).schema.columns.map((x: { name: string }) => x.name);
      if (columns.includes('must')) expect(rows).toEqual([]);
      else expect(rows).toEqual([{ a: 'x' }]);
    }
  });
});

describe('schema changed between validation and write', () => {
  it('validates again against the new schema', async () => {
    const { TablesService, tableStorageBytes } = await import('../../src/tables/service.js');
    const { StorageAccounting } = await import('../../src/limits/storage.js');
    const db = t.server.ctx.db;
    const storage = new StorageAccounting([tableStorageBytes], async () => undefined);
    const tables = new TablesService(db, { storage });
    const id = await c.createTable(uniqueName('retry'), [{ name: 'a', type: 'string' }]);
    let injected = false;
    // A database whose first transaction starts only after another writer added a required column.
    const racing = Object.create(db, {
      tx: {
        value: async (fn: Parameters<typeof db.tx>[0]) => {
          if (!injected) {
            injected = true;
            await tables.addColumn(c.workspaceId, id, { name: 'must', type: 'number', required: true });
          }
          return db.tx(fn);
        },
      },
    }) as typeof db;
    const racingTables = new TablesService(racing, { storage });
    await expect(racingTables.insertRows(c.workspaceId, id, [{ a: 'x' }], false)).rejects.toMatchObject({ status: 400, message: 'Missing required field: must' });
    expect(injected).toBe(true);
    const ok = await racingTables.insertRows(c.workspaceId, id, [{ a: 'y', must: '3' }], false);
    expect(ok[0].data).toEqual({ a: 'y', must: 3 });
    expect(await c.all(id)).toEqual([{ a: 'y', must: 3 }]);
  });
});

describe('maxRows', () => {
  it('is enforced atomically under concurrent single inserts', async () => {
    const id = await c.createTable(uniqueName('cap'), people);
    await t.server.ctx.db.query('UPDATE tables SET max_rows = 5 WHERE id = $1', [id]);
    expect((await c.table(id)).maxRows).toBe(5);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => c.insert(id, { email: `r${i}@x` })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(15);
    for (const r of refused) {
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('This table has reached its row limit (5 rows) on your current plan.');
    }
    expect((await c.snapshot(id)).rows).toBe(5);
    expect((await c.table(id)).rowCount).toBe(5);
  });

  it('is enforced atomically under concurrent batches, and frees up after deletes', async () => {
    const id = await c.createTable(uniqueName('capb'), people);
    await t.server.ctx.db.query('UPDATE tables SET max_rows = 10 WHERE id = $1', [id]);
    const results = await Promise.all(Array.from({ length: 6 }, (_, b) =>
      c.insertMany(id, Array.from({ length: 3 }, (_, i) => ({ email: `b${b}r${i}@x` })))));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect((await c.snapshot(id)).rows).toBe(9);
    const over = await c.insertMany(id, [{ email: 'x1@x' }, { email: 'x2@x' }]);
    expect(over.status).toBe(400);
    expect(over.body.error).toMatch(/would exceed this table's row limit \(10 rows\)/);
    expect((await c.insert(id, { email: 'last@x' })).status).toBe(200);
    expect((await c.insert(id, { email: 'more@x' })).status).toBe(400);
    const first = results.find((r) => r.status === 200)!.body.data.rows[0].id;
    expect((await c.call('DELETE', `/api/v1/tables/${id}/rows/${first}?workspaceId=${c.workspaceId}`)).status).toBe(200);
    expect((await c.insert(id, { email: 'more@x' })).status).toBe(200);
    expect((await c.table(id)).rowCount).toBe(10);
  });

  it('upsert checks the cap only when it inserts', async () => {
    const id = await c.createTable(uniqueName('capu'), people);
    await t.server.ctx.db.query('UPDATE tables SET max_rows = 1 WHERE id = $1', [id]);
    const up = (data: unknown) => c.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: c.workspaceId, data });
    expect((await up({ email: 'a@x' })).body.data.operation).toBe('insert');
    expect((await up({ email: 'a@x', age: 2 })).body.data.operation).toBe('update');
    const full = await up({ email: 'b@x' });
    expect(full.status).toBe(400);
    expect(full.body.error).toMatch(/row limit \(1 rows\)/);
  });
});

describe('update by filter (PUT)', () => {
  it('merges data into every matching row and reports exactly those ids', async () => {
    const id = await c.createTable(uniqueName('put'), people);
    const rows = (await c.insertMany(id, [
      { email: 'a@x', name: 'A', age: 10 }, { email: 'b@x', name: 'B', age: 20 }, { email: 'c@x', name: 'C', age: 30 },
    ])).body.data.rows;
    const r = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { age: { $gte: 20 } }, data: { name: 'Old', age: '99' } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { message: 'Rows updated successfully', updatedCount: 2, updatedRowIds: [rows[1].id, rows[2].id] } });
    expect(await c.all(id)).toEqual([
      { email: 'a@x', name: 'A', age: 10 }, { email: 'b@x', name: 'Old', age: 99 }, { email: 'c@x', name: 'Old', age: 99 },
    ]);
    const cleared = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { email: 'a@x' }, data: { name: null } });
    expect(cleared.body.data.updatedRowIds).toEqual([rows[0].id]);
    expect((await c.all(id))[0]).toEqual({ email: 'a@x', age: 10 });
    const after = (await c.query(id)).body.data.rows;
    expect(after[0].updatedAt >= after[0].createdAt).toBe(true);
  });

  it('answers no match with updatedCount 0; limit updates the first rows in table order', async () => {
    const id = await c.createTable(uniqueName('put2'), people);
    const rows = (await c.insertMany(id, Array.from({ length: 5 }, (_, i) => ({ email: `${i}@x`, age: 1 })))).body.data.rows;
    const none = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { age: 2 }, data: { name: 'x' } });
    expect(none.body.data).toEqual({ message: 'No rows matched the filter criteria', updatedCount: 0, updatedRowIds: [] });
    const lim = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { age: 1 }, data: { name: 'first' }, limit: 2 });
    expect(lim.body.data.updatedRowIds).toEqual([rows[0].id, rows[1].id]);
  });

  it('refuses bad input with 400 and writes nothing', async () => {
    const id = await c.createTable(uniqueName('put3'), people);
    await c.insertMany(id, [{ email: 'a@x', age: 1 }, { email: 'b@x', age: 2 }]);
    const before = await c.snapshot(id);
    const bad: [unknown, RegExp][] = [
      [{ filter: {}, data: { name: 'x' } }, /Filter must not be empty/],
      [{ filter: { age: 1 }, data: { age: 'old' } }, /"age"/],
      [{ filter: { age: 1 }, data: { ghost: 1 } }, /Unknown column "ghost"/],
      [{ filter: { ghost: 1 }, data: { name: 'x' } }, /Unknown column "ghost" in filter/],
      [{ filter: { age: { $gt: 'x' } }, data: { name: 'x' } }, /\$gt/],
      [{ filter: 'age=1', data: { name: 'x' } }, /.+/],
      [{ data: { name: 'x' } }, /filter/],
      [{ filter: { age: 1 } }, /data/],
      [{ filter: { age: 1 }, data: { name: 'x' }, limit: 0 }, /.+/],
    ];
    for (const [body, msg] of bad) {
      const r = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, ...(body as object) });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatch(msg);
    }
    expect(await c.snapshot(id)).toEqual(before);
  });
});

describe('batch update by id (PATCH /rows)', () => {
  it('merges each patch into its row and reports the ids in request order', async () => {
    const id = await c.createTable(uniqueName('patch'), people);
    const rows = (await c.insertMany(id, [{ email: 'a@x', age: 1 }, { email: 'b@x', age: 2 }, { email: 'c@x', age: 3 }])).body.data.rows;
    const r = await c.call('PATCH', `/api/v1/tables/${id}/rows`, {
      workspaceId: c.workspaceId, updates: [{ rowId: rows[2].id, data: { name: 'C' } }, { rowId: rows[0].id, data: { age: null, name: 'A' } }],
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { message: 'Rows updated successfully', updatedCount: 2, updatedRowIds: [rows[2].id, rows[0].id] } });
    expect(await c.all(id)).toEqual([{ email: 'a@x', name: 'A' }, { email: 'b@x', age: 2 }, { email: 'c@x', name: 'C', age: 3 }]);
  });

  it('writes nothing when a row is unknown, duplicated, foreign or a patch is bad', async () => {
    const id = await c.createTable(uniqueName('patch2'), people);
    const other = await c.createTable(uniqueName('patch2o'), people);
    const rows = (await c.insertMany(id, [{ email: 'a@x' }, { email: 'b@x' }])).body.data.rows;
    const foreignRow = (await c.insert(other, { email: 'o@x' })).body.data.row.id;
    const before = await c.snapshot(id);
    const cases: [unknown[], RegExp][] = [
      [[{ rowId: rows[0].id, data: { name: 'x' } }, { rowId: 'row_00000000000000000000000000000000', data: { name: 'y' } }], /Rows not found: row_0+/],
      [[{ rowId: rows[0].id, data: { name: 'x' } }, { rowId: foreignRow, data: { name: 'y' } }], /Rows not found/],
      [[{ rowId: rows[0].id, data: { name: 'x' } }, { rowId: 'garbage', data: { name: 'y' } }], /Rows not found: garbage/],
      [[{ rowId: rows[0].id, data: { name: 'x' } }, { rowId: rows[0].id, data: { name: 'y' } }], /duplicate rowId/],
      [[{ rowId: rows[0].id, data: { name: 'x' } }, { rowId: rows[1].id, data: { age: 'old' } }], /^Row 1: .*"age"/],
      [[], /.+/],
      [[{ rowId: rows[0].id }], /.+/],
    ];
    for (const [updates, msg] of cases) {
      const r = await c.call('PATCH', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, updates });
      expect(r.status, JSON.stringify(updates)).toBe(400);
      expect(r.body.error).toMatch(msg);
    }
    expect(await c.snapshot(id)).toEqual(before);
    expect((await c.all(other))).toEqual([{ email: 'o@x' }]);
  });
});

describe('delete', () => {
  it('deletes by ids, reporting deleted and missing ids', async () => {
    const id = await c.createTable(uniqueName('del'), people);
    const rows = (await c.insertMany(id, [{ email: 'a@x' }, { email: 'b@x' }, { email: 'c@x' }])).body.data.rows;
    const missing = 'row_00000000000000000000000000000000';
    const r = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, rowIds: [rows[0].id, missing, rows[2].id] });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      message: 'Successfully deleted 2 rows', deletedCount: 2, deletedRowIds: [rows[0].id, rows[2].id], requestedCount: 3, missingRowIds: [missing],
    });
    expect(await c.all(id)).toEqual([{ email: 'b@x' }]);
    const none = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, rowIds: [missing] });
    expect(none.body.data).toMatchObject({ message: 'No matching rows found for the provided IDs', deletedCount: 0, deletedRowIds: [] });
    expect((await c.table(id)).rowCount).toBe(1);
  });

  it('deletes by filter (with an optional limit) and refuses both or neither', async () => {
    const id = await c.createTable(uniqueName('delf'), people);
    const rows = (await c.insertMany(id, Array.from({ length: 6 }, (_, i) => ({ email: `${i}@x`, age: i % 2 })))).body.data.rows;
    const r = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { age: 1 }, limit: 2 });
    expect(r.body.data).toEqual({ message: 'Successfully deleted 2 rows', deletedCount: 2, deletedRowIds: [rows[1].id, rows[3].id] });
    const rest = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter: { age: 1 } });
    expect(rest.body.data.deletedRowIds).toEqual([rows[5].id]);
    const before = await c.snapshot(id);
    for (const body of [{ rowIds: [rows[0].id], filter: { age: 0 } }, {}, { filter: {} }, { rowIds: [] }, { rowIds: 'x' }, { filter: { nope: 1 } }]) {
      const bad = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, ...body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    expect(await c.snapshot(id)).toEqual(before);
    expect((await c.table(id)).rowCount).toBe(3);
  });
});

describe('single row routes', () => {
  it('gets, patches (merge) and deletes one row; unknown rows are 404', async () => {
    const id = await c.createTable(uniqueName('single'), people);
    const other = await c.createTable(uniqueName('singleo'), people);
    const row = (await c.insert(id, { email: 'a@x', name: 'A', age: 1 })).body.data.row;
    const foreign = (await c.insert(other, { email: 'o@x' })).body.data.row.id;
    const p = await c.call('PATCH', `/api/v1/tables/${id}/rows/${row.id}`, { workspaceId: c.workspaceId, data: { age: 2 } });
    expect(p.status).toBe(200);
    expect(p.body.data.message).toBe('Row updated successfully');
    expect(p.body.data.row).toMatchObject({ id: row.id, data: { email: 'a@x', name: 'A', age: 2 }, position: 0, createdAt: row.createdAt });
    const same = await c.call('PATCH', `/api/v1/tables/${id}/rows/${row.id}`, { workspaceId: c.workspaceId, data: {} });
    expect(same.body.data.row).toEqual(p.body.data.row);
    for (const rid of ['row_00000000000000000000000000000000', foreign, 'junk']) {
      for (const [m, path, body] of [
        ['GET', `/api/v1/tables/${id}/rows/${rid}?workspaceId=${c.workspaceId}`, undefined],
        ['PATCH', `/api/v1/tables/${id}/rows/${rid}`, { workspaceId: c.workspaceId, data: { age: 5 } }],
        ['DELETE', `/api/v1/tables/${id}/rows/${rid}?workspaceId=${c.workspaceId}`, undefined],
      ] as const) {
        const r = await c.call(m, path, body);
        expect(r.status, `${m} ${rid}`).toBe(404);
        expect(r.body).toEqual({ error: 'Row not found' });
      }
    }
    expect(await c.all(other)).toEqual([{ email: 'o@x' }]);
    const d = await c.call('DELETE', `/api/v1/tables/${id}/rows/${row.id}`, { workspaceId: c.workspaceId });
    expect(d.body).toEqual({ success: true, data: { message: 'Row deleted successfully', deletedCount: 1 } });
    expect((await c.table(id)).rowCount).toBe(0);
  });
});

describe('upsert', () => {
  it('inserts, then replaces the whole row on a match', async () => {
    const id = await c.createTable(uniqueName('ups'), people);
    const up = (data: unknown, conflictTarget?: string) =>
      c.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: c.workspaceId, data, ...(conflictTarget ? { conflictTarget } : {}) });
    const a = await up({ email: 'a@x', name: 'A', age: 1 });
    expect(a.status).toBe(200);
    expect(a.body.data).toMatchObject({ operation: 'insert', message: 'Row inserted successfully', row: { data: { email: 'a@x', name: 'A', age: 1 } } });
    const b = await up({ email: 'a@x', age: 2 }, 'email');
    expect(b.body.data).toMatchObject({ operation: 'update', message: 'Row updated successfully', row: { id: a.body.data.row.id, data: { email: 'a@x', age: 2 } } });
    expect(await c.all(id)).toEqual([{ email: 'a@x', age: 2 }]);
  });

  it('validates the table, target and data', async () => {
    const noUnique = await c.createTable(uniqueName('upsn'), [{ name: 'a', type: 'string' }]);
    const two = await c.createTable(uniqueName('ups2'), [{ name: 'a', type: 'string', unique: true }, { name: 'b', type: 'number', unique: true }, { name: 'c', type: 'string' }]);
    const up = (tid: string, body: object) => c.call('POST', `/api/v1/tables/${tid}/rows/upsert`, { workspaceId: c.workspaceId, ...body });
    expect((await up(noUnique, { data: { a: 'x' } })).body.error).toMatch(/requires at least one unique column/);
    expect((await up(two, { data: { a: 'x', b: 1 } })).body.error).toMatch(/several unique columns.*a, b/);
    expect((await up(two, { data: { a: 'x' }, conflictTarget: 'c' })).body.error).toMatch(/not a unique column/);
    expect((await up(two, { data: { a: 'x' }, conflictTarget: 'zz' })).body.error).toMatch(/Unknown column "zz"/);
    expect((await up(two, { data: { b: 1 }, conflictTarget: 'a' })).body.error).toMatch(/must include a value for the conflict target column "a"/);
    expect((await up(two, { data: { a: 'x', b: 'one' }, conflictTarget: 'a' })).status).toBe(400);
    expect((await up(two, {})).status).toBe(400);
    expect((await c.snapshot(two)).rows).toBe(0);
    // Another unique column is still checked against other rows.
    expect((await up(two, { data: { a: 'x', b: 1 }, conflictTarget: 'a' })).status).toBe(200);
    expect((await up(two, { data: { a: 'y', b: 2 }, conflictTarget: 'a' })).status).toBe(200);
    const clash = await up(two, { data: { a: 'y', b: 1 }, conflictTarget: 'a' });
    expect(clash.status).toBe(409);
    expect(clash.body).toMatchObject({ column: 'b', value: 1 });
    const byB = await up(two, { data: { a: 'z', b: 2 }, conflictTarget: 'b' });
    expect(byB.body.data.operation).toBe('update');
    expect(await c.all(two)).toEqual([{ a: 'x', b: 1 }, { a: 'z', b: 2 }]);
  });

  it('concurrent upserts of one key yield one row', async () => {
    const id = await c.createTable(uniqueName('upsc'), people);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      c.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: c.workspaceId, data: { email: 'k@x', age: i } })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.filter((r) => r.body.data.operation === 'insert')).toHaveLength(1);
    expect((await c.snapshot(id)).rows).toBe(1);
  });
});

describe('bad requests write nothing', () => {
  it('malformed JSON, wrong types and missing fields are 400 on every write route', async () => {
    const id = await c.createTable(uniqueName('badreq'), people);
    const row = (await c.insert(id, { email: 'a@x' })).body.data.row.id;
    const before = await c.snapshot(id);
    const routes: [string, string][] = [
      ['POST', `/api/v1/tables/${id}/rows`], ['PUT', `/api/v1/tables/${id}/rows`], ['PATCH', `/api/v1/tables/${id}/rows`],
      ['DELETE', `/api/v1/tables/${id}/rows`], ['PATCH', `/api/v1/tables/${id}/rows/${row}`], ['POST', `/api/v1/tables/${id}/rows/upsert`],
      ['POST', `/api/v1/tables/${id}/columns`], ['PATCH', `/api/v1/tables/${id}/columns`], ['DELETE', `/api/v1/tables/${id}/columns`],
    ];
    for (const [m, p] of routes) {
      const malformed = await c.call(m, p, '{"workspaceId": ');
      expect(malformed.status, `${m} ${p}`).toBe(400);
      expect(malformed.body).toEqual({ error: 'Request body must be valid JSON' });
      const arr = await c.call(m, p, '[1,2]');
      expect(arr.status, `${m} ${p} array`).toBe(400);
      const wrong = await c.call(m, p, { workspaceId: 42, data: 'x', rows: 'x', updates: 'x', rowIds: 'x', filter: 'x', column: 'x' });
      expect(wrong.status, `${m} ${p} wrong`).toBe(400);
      expect(Array.isArray(wrong.body.details)).toBe(true);
      const missingWs = await c.call(m, p, { data: { email: 'q@x' }, rows: [{ email: 'q@x' }], updates: [{ rowId: row, data: {} }], rowIds: [row], filter: { email: 'a@x' }, column: { name: 'z', type: 'string' } });
      expect(missingWs.status, `${m} ${p} no workspace`).toBe(400);
    }
    expect(await c.snapshot(id)).toEqual(before);
    expect((await c.table(id)).schema.columns).toHaveLength(3);
  });

  it('a body key __proto__ never reaches the row', async () => {
    const id = await c.createTable(uniqueName('proto'), people);
    const r = await c.call('POST', `/api/v1/tables/${id}/rows`, `{"workspaceId":"${c.workspaceId}","data":{"email":"a@x","__proto__":{"age":1}}}`);
    if (r.status === 200) expect(r.body.data.row.data).toEqual({ email: 'a@x' });
    else expect(r.status).toBe(400);
    const rows = await t.server.ctx.db.query<{ data: string }>('SELECT data::text AS data FROM table_rows WHERE table_id = $1', [id]);
    for (const row of rows) expect(row.data).not.toContain('__proto__');
  });

  it('a body key __proto__ written with a \\u escape never reaches the row either', async () => {
    const id = await c.createTable(uniqueName('proto_escaped'), people);
    // The raw body holds \u005f_proto__, which JSON decodes to __proto__.
    const r = await c.call('POST', `/api/v1/tables/${id}/rows`, `{"workspaceId":"${c.workspaceId}","data":{"email":"b@x","\\u005f_proto__":{"age":2}}}`);
    expect(r.status).toBe(200);
    expect(r.body.data.row.data).toEqual({ email: 'b@x' });
    const rows = await t.server.ctx.db.query<{ data: string }>('SELECT data::text AS data FROM table_rows WHERE table_id = $1', [id]);
    expect(rows).toHaveLength(1);
    for (const row of rows) expect(row.data).not.toContain('proto');
  });

  it('a too deeply nested body is a 400', async () => {
    const id = await c.createTable(uniqueName('deep'), [{ name: 'j', type: 'json' }]);
    const r = await c.insert(id, { j: JSON.parse('['.repeat(100) + ']'.repeat(100)) });
    expect(r.status).toBe(400);
    expect((await c.snapshot(id)).rows).toBe(0);
  });
});
