import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

// Currency columns (the reference's newer schema): numbers that name their ISO 4217 code, filtered, sorted and
// indexed as numbers.

let t: TestServer;
let c: TablesClient;
beforeAll(async () => {
  t = await startTestServer();
  c = await otherWorkspace(t, 'enterprise');
});
afterAll(async () => {
  await t?.close();
});

const create = (columns: unknown[]) => c.call('POST', '/api/v1/tables', { workspaceId: c.workspaceId, name: uniqueName('money'), schema: { columns } });

describe('currency columns', () => {
  it('store amounts as numbers under their upper-cased code, defaulting to USD', async () => {
    const r = await create([{ name: 'item', type: 'string' }, { name: 'price', type: 'currency', currencyCode: 'eur' }, { name: 'cost', type: 'currency' }]);
    expect(r.status, r.text).toBe(200);
    const cols = r.body.data.table.schema.columns;
    expect(cols[1]).toMatchObject({ name: 'price', type: 'currency', currencyCode: 'EUR' });
    expect(cols[2]).toMatchObject({ name: 'cost', type: 'currency', currencyCode: 'USD' });
    expect(cols[0].currencyCode).toBeUndefined();
    const id = r.body.data.table.id as string;
    expect((await c.insertMany(id, [{ item: 'a', price: '12.5', cost: 3 }, { item: 'b', price: 4, cost: ' 1e2 ' }, { item: 'c', price: 30 }])).status).toBe(200);
    expect(await c.all(id)).toEqual([{ item: 'a', price: 12.5, cost: 3 }, { item: 'b', price: 4, cost: 100 }, { item: 'c', price: 30 }]);
    const bad = await c.insert(id, { item: 'd', price: 'ten euros' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/price/);

    const over = await c.query(id, { filter: { price: { $gt: 10 } }, sort: { price: 'desc' } });
    expect(over.body.data.rows.map((x: { data: { item: string } }) => x.data.item)).toEqual(['c', 'a']);
    expect((await c.query(id, { filter: { price: '4' } })).body.data.rows.map((x: { data: { item: string } }) => x.data.item)).toEqual(['b']);
  });

  it('refuse a code that is not three letters, and a code on another type', async () => {
    for (const [columns, message] of [
      [[{ name: 'p', type: 'currency', currencyCode: 'EU' }], /currencyCode must be a three-letter ISO 4217 code/],
      [[{ name: 'p', type: 'currency', currencyCode: '12$' }], /currencyCode must be a three-letter ISO 4217 code/],
      [[{ name: 'p', type: 'number', currencyCode: 'USD' }], /currencyCode is only allowed for currency columns/],
    ] as const) {
      const r = await create([...columns]);
      expect(r.status, r.text).toBe(400);
      expect(r.body.error).toMatch(message);
    }
  });

  it('change from number and back, and change their code without touching the amounts', async () => {
    const r = await create([{ name: 'n', type: 'number' }]);
    const id = r.body.data.table.id as string;
    await c.insertMany(id, [{ n: 1 }, { n: 2.25 }]);
    const patch = (updates: Record<string, unknown>) => c.call('PATCH', `/api/v1/tables/${id}/columns`, { workspaceId: c.workspaceId, columnName: 'n', updates });
    const toCurrency = await patch({ type: 'currency', currencyCode: 'gbp' });
    expect(toCurrency.status, toCurrency.text).toBe(200);
    expect(toCurrency.body.data.columns[0]).toMatchObject({ type: 'currency', currencyCode: 'GBP' });
    const recoded = await patch({ currencyCode: 'JPY' });
    expect(recoded.body.data.columns[0].currencyCode).toBe('JPY');
    expect(await c.all(id)).toEqual([{ n: 1 }, { n: 2.25 }]);
    expect((await c.query(id, { filter: { n: { $gte: 2 } } })).body.data.rows).toHaveLength(1);
    const back = await patch({ type: 'number' });
    expect(back.body.data.columns[0]).toEqual(expect.not.objectContaining({ currencyCode: expect.anything() }));
    expect((await patch({ currencyCode: 'USD' })).status).toBe(400);
  });
});
