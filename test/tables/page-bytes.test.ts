import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLE_LIMITS } from '../../src/tables/limits.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

// A query page holds at most `limit` rows and at most the page byte budget of row data (at least one
// row); cut short it says `truncated`, and `nextOffset` / `nextCursor` tell the client how to go on.

const BUDGET = 40_000;

/** Stored bytes of each row of a table, in table order. */
async function rowBytes(t: TestServer, tableId: string): Promise<number[]> {
  const rows = await t.server.ctx.db.query<{ bytes: number }>('SELECT bytes FROM table_rows WHERE table_id = $1 ORDER BY position', [tableId]);
  return rows.map((r) => Number(r.bytes));
}

/** How many leading rows fit in `budget` (at least one). */
function fitting(bytes: number[], budget: number): number {
  let sum = 0;
  let n = 0;
  for (const b of bytes) {
    if (n > 0 && sum + b > budget) break;
    sum += b;
    n++;
  }
  return n;
}

describe('page byte budget (WEFT_TABLE_PAGE_MAX_BYTES)', () => {
  let t: TestServer;
  let c: TablesClient;
  let big: string;
  let bytes: number[];

  beforeAll(async () => {
    t = await startTestServer({ env: { WEFT_TABLE_PAGE_MAX_BYTES: String(BUDGET) } });
    c = await otherWorkspace(t, 'team');
    big = await c.createTable(uniqueName('big'), [{ name: 'n', type: 'number' }, { name: 'blob', type: 'json' }]);
    // Ten rows of about 10 KB: three or four fit in 40 KB.
    const r = await c.insertMany(big, Array.from({ length: 10 }, (_, n) => ({ n, blob: { text: 'x'.repeat(9_000 + n * 100) } })));
    expect(r.status, r.text).toBe(200);
    bytes = await rowBytes(t, big);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('stops a page early, says so and tells where the next page starts', async () => {
    const expected = fitting(bytes, BUDGET);
    expect(expected).toBeGreaterThan(1);
    expect(expected).toBeLessThan(10);
    const r = await c.query(big, { limit: 100 });
    expect(r.status).toBe(200);
    const d = r.body.data;
    expect(d.rows.map((x: { data: { n: number } }) => x.data.n)).toEqual([...Array(expected).keys()]);
    expect(d).toMatchObject({ rowCount: expected, totalCount: 10, limit: 100, offset: 0, truncated: true, nextOffset: expected });
    expect(d.nextCursor).toEqual(expect.any(String));
    expect(bytes.slice(0, expected).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(BUDGET);
  });

  it('pages through every row with nextOffset until it is null', async () => {
    const seen: number[] = [];
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const r = await c.query(big, { limit: 1000, offset });
      expect(r.status).toBe(200);
      const d = r.body.data;
      expect(d.rowCount).toBeGreaterThan(0);
      expect(d.totalCount).toBe(10);
      seen.push(...d.rows.map((x: { data: { n: number } }) => x.data.n));
      if (d.nextOffset === null) {
        expect(d.nextCursor).toBeNull();
      } else {
        expect(d.nextOffset).toBe(offset + d.rowCount);
        expect(d.nextCursor).toBe(String(d.nextOffset));
      }
      offset = d.nextOffset;
      pages++;
    }
    expect(seen).toEqual([...Array(10).keys()]);
    expect(pages).toBeGreaterThan(2);
  });

  // The second filter reads each row's data more than twice, so it runs on the rows' data read once.
  it.each([
    ['a plain filter', { n: { $gte: 2 } }],
    ['a filter that reads the data once', { $and: [{ n: { $gte: 2 } }, { n: { $ne: 100 } }, { blob: { $isNotNull: true } }] }],
  ])('applies the budget after %s and the sort, and leaves pages under it alone', async (_label, filter) => {
    const sort = { n: 'desc' };
    const desc = [...bytes.keys()].filter((n) => n >= 2).reverse();
    const expected = fitting(desc.map((n) => bytes[n]), BUDGET);
    const r = await c.query(big, { filter, sort, limit: 50 });
    expect(r.body.data.rows.map((x: { data: { n: number } }) => x.data.n)).toEqual(desc.slice(0, expected));
    expect(r.body.data).toMatchObject({ truncated: true, totalCount: 8, nextOffset: expected });
    // Two rows fit: the limit ends the page, not the budget.
    const two = await c.query(big, { filter, sort, limit: 2, offset: 1 });
    expect(two.body.data.rows.map((x: { data: { n: number } }) => x.data.n)).toEqual(desc.slice(1, 3));
    expect(two.body.data).toMatchObject({ rowCount: 2, truncated: false, totalCount: 8, nextOffset: 3, nextCursor: '3' });
    // The last page.
    const last = await c.query(big, { filter, sort, limit: 2, offset: 7 });
    expect(last.body.data).toMatchObject({ rowCount: 1, truncated: false, totalCount: 8, nextOffset: null, nextCursor: null });
  });

  it('always returns at least one row, even one larger than the budget', async () => {
    const id = await c.createTable(uniqueName('huge'), [{ name: 'blob', type: 'json' }]);
    const rows = [{ blob: 'a'.repeat(60_000) }, { blob: 'b'.repeat(60_000) }, { blob: 'c' }];
    expect((await c.insertMany(id, rows)).status).toBe(200);
    const first = await c.query(id, { limit: 10 });
    expect(first.body.data.rows.map((x: { data: { blob: string } }) => x.data.blob[0])).toEqual(['a']);
    expect(first.body.data).toMatchObject({ rowCount: 1, truncated: true, nextOffset: 1 });
    const second = await c.query(id, { limit: 10, offset: 1 });
    expect(second.body.data).toMatchObject({ rowCount: 1, truncated: true, nextOffset: 2 });
    const third = await c.query(id, { limit: 10, offset: 2 });
    expect(third.body.data).toMatchObject({ rowCount: 1, truncated: false, nextOffset: null, totalCount: 3 });
  });

  it('does not cut tables smaller than the budget', async () => {
    const id = await c.createTable(uniqueName('small'), [{ name: 'n', type: 'number' }]);
    expect((await c.insertMany(id, Array.from({ length: 30 }, (_, n) => ({ n })))).status).toBe(200);
    const all = await c.query(id, { limit: 1000 });
    expect(all.body.data).toMatchObject({ rowCount: 30, totalCount: 30, truncated: false, nextOffset: null, nextCursor: null });
    const page = await c.query(id, { limit: 10, offset: 10 });
    expect(page.body.data).toMatchObject({ rowCount: 10, truncated: false, nextOffset: 20, nextCursor: '20' });
  });
});

describe('page byte budget at its default', () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('cuts a page of 100 rows of 90 KB (9 MB) at 8 MiB', { timeout: 120_000 }, async () => {
    expect(TABLE_LIMITS.maxPageBytes).toBe(8 * 1024 * 1024);
    const c = await otherWorkspace(t, 'team');
    const id = await c.createTable(uniqueName('default'), [{ name: 'n', type: 'number' }, { name: 'blob', type: 'json' }]);
    for (let batch = 0; batch < 4; batch++) {
      const rows = Array.from({ length: 25 }, (_, i) => ({ n: batch * 25 + i, blob: 'z'.repeat(90_000) }));
      const r = await c.insertMany(id, rows);
      expect(r.status, r.text.slice(0, 300)).toBe(200);
    }
    const bytes = await rowBytes(t, id);
    const expected = fitting(bytes, TABLE_LIMITS.maxPageBytes);
    expect(expected).toBeLessThan(100);
    const r = await c.query(id, { limit: 100 });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ rowCount: expected, totalCount: 100, truncated: true, nextOffset: expected });
    const rest = await c.query(id, { limit: 100, offset: expected });
    expect(rest.body.data).toMatchObject({ rowCount: 100 - expected, truncated: false, nextOffset: null });
    expect(rest.body.data.rows[0].data.n).toBe(expected);
  });
});
