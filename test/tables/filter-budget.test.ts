import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace } from './helpers.js';

// Each condition of a filter has its own bound (8 json $contains elements, 256 substring characters, 1,000 $in
// values), and a filter may hold 200 conditions: 200 conditions each at its bound cost 200 passes over every
// row's cell. These bounds hold for the filter as a whole (docs/architecture.md, Tables: bounded statements).
let t: TestServer;
let c: TablesClient;
let id: string;

type R = { name: string; note: string; n: number; j: unknown };
const rows: R[] = Array.from({ length: 12 }, (_, i) => ({
  name: `name${i}`, note: `note ${i} ${'x'.repeat(i)}`, n: i, j: [i, i + 100, 'tag' + (i % 3)],
}));

beforeAll(async () => {
  t = await startTestServer();
  c = await otherWorkspace(t, 'team');
  id = await c.createTable('budget', [
    { name: 'name', type: 'string' },
    { name: 'note', type: 'string' },
    { name: 'n', type: 'number' },
    { name: 'j', type: 'json' },
  ]);
  const r = await c.insertMany(id, rows);
  if (r.status !== 200) throw new Error(r.text);
});
afterAll(async () => {
  await t?.close();
});

const names = (r: { body: { data: { rows: { data: R }[] } } }) => r.body.data.rows.map((x) => x.data.name);
const expected = (pred: (r: R) => boolean) => rows.filter(pred).map((r) => r.name);
const or = (n: number, f: (k: number) => Record<string, unknown>) => ({ $or: Array.from({ length: n }, (_, k) => f(k)) });

describe('bounds on the filter as a whole', () => {
  const refused: [string, Record<string, unknown>, RegExp][] = [
    // The audit's filter: 21 conditions of 8 elements, 168 passes over the array of every row.
    ['21 json $contains of 8 elements each', or(21, (k) => ({ j: { $contains: [1, 2, 3, 4, 5, 6, 7, 100 + k] } })),
      /filter's json \$contains operands have more than 8 array elements in all/],
    ['two json $contains of 5 elements', or(2, (k) => ({ j: { $contains: [k, 1, 2, 3, 4] } })), /more than 8 array elements in all/],
    ['nine json $contains of a scalar (each still one pass)', or(9, (k) => ({ j: { $contains: k } })), /more than 8 array elements in all/],
    ['17 substring conditions', or(17, (k) => ({ note: { $contains: `q${k}` } })), /filter has more than 16 substring and pattern conditions/],
    ['17 pattern conditions', or(17, (k) => ({ note: { $like: `q${k}*` } })), /filter has more than 16 substring and pattern conditions/],
    ['16 substring conditions and one on the id', { ...or(16, (k) => ({ name: { $startsWith: `z${k}` } })), id: { $contains: 'row_' } },
      /more than 16 substring and pattern conditions/],
    ['five substring operands of 256 characters', or(5, (k) => ({ note: { $endsWith: `${k}`.padEnd(256, 'y') } })),
      /substring and pattern operands \(\$contains, \$ncontains, \$startsWith, \$endsWith and the \$like family on text and ids\) are longer than 1024 characters in all/],
    ['two $in lists of 600 values', or(2, (k) => ({ n: { $in: Array.from({ length: 600 }, (_, i) => -(k * 600 + i) - 1) } })),
      /filter's \$in and \$nin lists have more than 1000 values in all/],
    ['$in and $nin of 501 values each', { n: { $in: Array.from({ length: 501 }, (_, i) => i) }, name: { $nin: Array.from({ length: 501 }, (_, i) => `m${i}`) } },
      /more than 1000 values in all/],
    ['26 $in of 8 values (each value a containment)', or(26, (k) => ({ n: { $in: Array.from({ length: 8 }, (_, i) => -(k * 8 + i) - 1) } })),
      /filter has more than 200 conditions \(a \$in or \$nin of up to 8 values counts one for each value\)/],
  ];

  it.each(refused)('refuses %s with a 400 naming the bound', async (_label, filter, message) => {
    const r = await c.query(id, { filter });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toMatch(message);
  });

  it('refuses them on updates and deletes by filter too, and writes nothing', async () => {
    const before = await c.snapshot(id);
    for (const [, filter, message] of refused) {
      const put = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter, data: { note: 'changed' } });
      expect(put.status, put.text).toBe(400);
      expect(put.body.error).toMatch(message);
      const del = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter });
      expect(del.status, del.text).toBe(400);
      expect(del.body.error).toMatch(message);
    }
    expect(await c.snapshot(id)).toEqual(before);
  });

  it('bounds a filter sent in a body as a query string is bounded, in bytes of its JSON', async () => {
    // One equality with a json array: compared element by element with the cell of every row. Within the
    // query string's 32,768 characters no filter gets near this; a request body could carry 10 MiB of them.
    const big = Array.from({ length: 12_000 }, (_, i) => i);
    const filter = { $or: [{ j: big }, { j: [...big, 1] }] };
    const before = await c.snapshot(id);
    const put = await c.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter, data: { note: 'changed' } });
    expect(put.status, put.text).toBe(400);
    expect(put.body.error).toMatch(/filter is larger than 98304 bytes of JSON/);
    const del = await c.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: c.workspaceId, filter });
    expect(del.status, del.text).toBe(400);
    expect(del.body.error).toMatch(/larger than 98304 bytes/);
    expect(await c.snapshot(id)).toEqual(before);
  });

  it('answers filters at the bounds, and right', async () => {
    // 8 json elements in all, over two conditions.
    const json = await c.query(id, { filter: or(2, (k) => ({ j: { $contains: [k + 3, k + 103, 'tag0', 'tag0'] } })), limit: 100 });
    expect(json.status, json.text).toBe(200);
    expect(names(json)).toEqual(expected((r) => r.name === 'name3'));
    // 16 substring conditions (the id's included), 1,024 characters in all: 23 + 7 + 994.
    const substrings = await c.query(id, {
      filter: { $or: [
        ...Array.from({ length: 11 }, (_, k) => ({ name: { $endsWith: `e${k}` } })),
        { id: { $startsWith: 'nothing' } },
        ...[249, 249, 249, 247].map((n) => ({ note: { $contains: 'x'.repeat(n) } })),
      ] },
      limit: 100,
    });
    expect(substrings.status, substrings.text).toBe(200);
    expect(names(substrings)).toEqual(expected((r) => r.n <= 10));
    // 1,000 $in / $nin values in all.
    const lists = await c.query(id, {
      filter: { n: { $in: [2, 5, ...Array.from({ length: 498 }, (_, i) => 1000 + i)] }, name: { $nin: ['name5', ...Array.from({ length: 499 }, (_, i) => `m${i}`)] } },
      limit: 100,
    });
    expect(lists.status, lists.text).toBe(200);
    expect(names(lists)).toEqual(['name2']);
    // 200 containments: 25 lists of 8 values.
    const containments = await c.query(id, { filter: or(25, (k) => ({ n: { $in: Array.from({ length: 8 }, (_, i) => k * 8 + i) } })), limit: 100 });
    expect(containments.status, containments.text).toBe(200);
    expect(names(containments)).toEqual(rows.map((r) => r.name));
  });
});
