import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace } from './helpers.js';

let t: TestServer;
let c: TablesClient;
let id: string;

type R = { name: string; age?: number; score?: number; active?: boolean; born?: string; tags?: unknown; tier?: string; note?: string };
const rows: R[] = [
  { name: 'ann', age: 30, score: 9.5, active: true, born: '1994-03-01', tags: ['a', 'b'], tier: 'gold', note: 'Likes 100% cotton' },
  { name: 'bob', age: 25, score: 7, active: false, born: '1999-12-31T23:00:00.000Z', tags: ['b'], tier: 'silver', note: 'under_score' },
  { name: 'cat', age: 41, score: 7, active: true, born: '1983-07-15', tags: { k: 1 }, tier: 'gold' },
  { name: 'dan', age: 25, active: false, born: '1999-01-01', tier: 'bronze', note: 'Bob is a friend' },
  { name: 'eve', score: 3.25, active: true, tags: [], note: '' },
  { name: 'Fay', age: 58, score: 10, born: '1966-10-10T12:00:00.000Z', tags: ['c'], tier: 'silver', note: 'fay' },
  { name: 'gus', age: 19, score: -1, active: false, born: '2005-05-05', tier: 'bronze' },
  { name: 'hal', age: 33, score: 7, active: true, born: '1991-02-02', tags: 'plain', note: 'HAL 9000' },
];

beforeAll(async () => {
  t = await startTestServer();
  c = await otherWorkspace(t, 'team');
  id = await c.createTable('people', [
    { name: 'name', type: 'string', required: true, unique: true },
    { name: 'age', type: 'number' },
    { name: 'score', type: 'number' },
    { name: 'active', type: 'boolean' },
    { name: 'born', type: 'date' },
    { name: 'tags', type: 'json' },
    { name: 'tier', type: 'select', options: ['gold', 'silver', 'bronze'] },
    { name: 'note', type: 'string' },
  ]);
  const r = await c.insertMany(id, rows);
  if (r.status !== 200) throw new Error(r.text);
});
afterAll(async () => {
  await t?.close();
});

async function names(filter: unknown, sort?: unknown): Promise<string[]> {
  const r = await c.query(id, { filter, sort, limit: 1000 });
  if (r.status !== 200) throw new Error(`${r.status} ${r.text}`);
  expect(r.body.data.totalCount).toBe(r.body.data.rows.length);
  return r.body.data.rows.map((x: { data: R }) => x.data.name);
}

const inOrder = (pred: (r: R) => boolean) => rows.filter(pred).map((r) => r.name);
const ms = (d?: string) => (d === undefined ? undefined : Date.parse(d.length === 10 ? `${d}T00:00:00Z` : d));

describe('operators by type', () => {
  const cases: [string, unknown, (r: R) => boolean][] = [
    // string
    ['string equality', { name: 'bob' }, (r) => r.name === 'bob'],
    ['string $eq is case-sensitive', { name: { $eq: 'fay' } }, () => false],
    ['string $ne includes everything else', { note: { $ne: 'fay' } }, (r) => r.note !== 'fay'],
    ['string $gt (byte order)', { name: { $gt: 'dan' } }, (r) => r.name > 'dan'],
    ['string $lte', { name: { $lte: 'cat' } }, (r) => r.name <= 'cat'],
    ['string $in', { name: { $in: ['ann', 'eve', 'zed'] } }, (r) => ['ann', 'eve'].includes(r.name)],
    ['string $nin includes nulls', { note: { $nin: ['fay', ''] } }, (r) => r.note !== 'fay' && r.note !== ''],
    ['$contains is case-insensitive', { note: { $contains: 'bob' } }, (r) => !!r.note?.toLowerCase().includes('bob')],
    ['$contains treats % literally', { note: { $contains: '100%' } }, (r) => !!r.note?.includes('100%')],
    ['$contains treats _ literally', { note: { $contains: 'r_s' } }, (r) => !!r.note?.includes('r_s')],
    ['$startsWith', { note: { $startsWith: 'hal' } }, (r) => !!r.note?.toLowerCase().startsWith('hal')],
    ['$endsWith', { note: { $endsWith: 'FRIEND' } }, (r) => !!r.note?.toLowerCase().endsWith('friend')],
    ['$isNull', { note: { $isNull: true } }, (r) => r.note === undefined],
    ['$isNull false', { note: { $isNull: false } }, (r) => r.note !== undefined],
    ['$isNotNull', { note: { $isNotNull: true } }, (r) => r.note !== undefined],
    ['$isNotNull false', { note: { $isNotNull: false } }, (r) => r.note === undefined],
    ['equality with null means is null', { note: null }, (r) => r.note === undefined],
    ['$ne null means is not null', { tier: { $ne: null } }, (r) => r.tier !== undefined],
    ['empty string equality', { note: '' }, (r) => r.note === ''],
    // number
    ['number equality', { age: 25 }, (r) => r.age === 25],
    ['number equality coerces the operand', { age: '25' }, (r) => r.age === 25],
    ['number $ne includes nulls', { age: { $ne: 25 } }, (r) => r.age !== 25],
    ['number $gt', { age: { $gt: 30 } }, (r) => r.age !== undefined && r.age > 30],
    ['number $gte', { age: { $gte: 30 } }, (r) => r.age !== undefined && r.age >= 30],
    ['number $lt', { score: { $lt: 7 } }, (r) => r.score !== undefined && r.score < 7],
    ['number $lte', { score: { $lte: 7 } }, (r) => r.score !== undefined && r.score <= 7],
    ['number range (two ops ANDed)', { age: { $gt: 20, $lt: 40 } }, (r) => r.age !== undefined && r.age > 20 && r.age < 40],
    ['number compares numerically, not as text', { score: { $gt: 9 } }, (r) => r.score !== undefined && r.score > 9],
    ['number $in', { score: { $in: [7, 10] } }, (r) => r.score === 7 || r.score === 10],
    ['number $in with null', { age: { $in: [25, null] } }, (r) => r.age === 25 || r.age === undefined],
    ['number $nin', { score: { $nin: [7] } }, (r) => r.score !== 7],
    ['number $nin with null excludes nulls', { age: { $nin: [25, null] } }, (r) => r.age !== 25 && r.age !== undefined],
    ['$in [] matches nothing', { age: { $in: [] } }, () => false],
    ['$nin [] matches everything', { age: { $nin: [] } }, () => true],
    ['number $isNull', { age: { $isNull: true } }, (r) => r.age === undefined],
    // boolean
    ['boolean equality', { active: true }, (r) => r.active === true],
    ['boolean equality coerces "false"', { active: 'false' }, (r) => r.active === false],
    ['boolean $ne includes nulls', { active: { $ne: true } }, (r) => r.active !== true],
    ['boolean $in', { active: { $in: [false] } }, (r) => r.active === false],
    ['boolean $isNull', { active: { $isNull: true } }, (r) => r.active === undefined],
    // date
    ['date equality (same instant, other notation)', { born: '1999-12-31T23:00:00Z' }, (r) => r.name === 'bob'],
    ['date equality of a calendar date', { born: { $eq: '1994-03-01T00:00:00.000Z' } }, (r) => r.name === 'ann'],
    ['date $gt', { born: { $gt: '1990-01-01' } }, (r) => (ms(r.born) ?? -Infinity) > ms('1990-01-01')!],
    ['date $gte / $lt range', { born: { $gte: '1983-07-15', $lt: '1999-06-01' } }, (r) => r.born !== undefined && ms(r.born)! >= ms('1983-07-15')! && ms(r.born)! < ms('1999-06-01')!],
    ['date $lte with an offset operand', { born: { $lte: '1966-10-10T14:00:00+02:00' } }, (r) => r.born !== undefined && ms(r.born)! <= Date.parse('1966-10-10T12:00:00Z')],
    ['date $in', { born: { $in: ['1999-01-01', '2005-05-05T00:00:00Z'] } }, (r) => r.name === 'dan' || r.name === 'gus'],
    ['date $nin', { born: { $nin: ['1999-01-01'] } }, (r) => r.born !== '1999-01-01'],
    ['date $ne', { born: { $ne: '1991-02-02' } }, (r) => r.born !== '1991-02-02'],
    ['date $isNotNull', { born: { $isNotNull: true } }, (r) => r.born !== undefined],
    // json
    ['json equality with an array', { tags: ['b'] }, (r) => JSON.stringify(r.tags) === '["b"]'],
    ['json equality with an object', { tags: { k: 1 } }, (r) => r.name === 'cat'],
    ['json equality with a scalar', { tags: 'plain' }, (r) => r.tags === 'plain'],
    ['json $contains an element', { tags: { $contains: 'b' } }, (r) => Array.isArray(r.tags) && r.tags.includes('b')],
    ['json $ne', { tags: { $ne: ['b'] } }, (r) => JSON.stringify(r.tags) !== '["b"]'],
    ['json $in', { tags: { $in: [['c'], 'plain'] } }, (r) => r.name === 'Fay' || r.name === 'hal'],
    ['json $isNull', { tags: { $isNull: true } }, (r) => r.tags === undefined],
    // select
    ['select equality (case-insensitive operand)', { tier: 'GOLD' }, (r) => r.tier === 'gold'],
    ['select $in', { tier: { $in: ['silver', 'bronze'] } }, (r) => r.tier === 'silver' || r.tier === 'bronze'],
    ['select $nin includes nulls', { tier: { $nin: ['gold'] } }, (r) => r.tier !== 'gold'],
    ['select $contains', { tier: { $contains: 'ILV' } }, (r) => r.tier === 'silver'],
    ['select $startsWith', { tier: { $startsWith: 'br' } }, (r) => r.tier === 'bronze'],
    // substring operands are literal text, not patterns
    ['$contains treats regex metacharacters literally', { note: { $contains: '9+' } }, () => false],
    ['$contains treats a literal marker as text', { note: { $contains: '***=HAL' } }, () => false],
    ['$startsWith treats . literally', { note: { $startsWith: 'h.l' } }, () => false],
    ['$endsWith treats $ literally', { note: { $endsWith: 'd$' } }, () => false],
    ['$endsWith with metacharacters in the text', { note: { $endsWith: '100% cotton' } }, (r) => r.name === 'ann'],
    ['$contains of 256 characters', { note: { $contains: 'x'.repeat(256) } }, () => false],
    // filters that read each row's data once (more than two reads of it)
    ['many conditions', { $and: [{ note: { $ne: 'x' } }, { tier: { $ne: 'gold' } }, { age: { $gte: 20 } }, { name: { $contains: 'A' } }] },
      (r) => r.tier !== 'gold' && (r.age ?? -1) >= 20 && r.name.toLowerCase().includes('a')],
    ['many conditions with system fields', { $or: [{ id: { $startsWith: 'row_' }, age: 25 }, { score: 10 }, { note: { $endsWith: '9000' } }] },
      (r) => r.age === 25 || r.score === 10 || r.name === 'hal'],
    ['$in of many numbers', { age: { $in: [25, 30, ...Array.from({ length: 20 }, (_, i) => 100 + i)] } }, (r) => r.age === 25 || r.age === 30],
    ['$nin of many strings includes nulls', { note: { $nin: ['fay', '', ...Array.from({ length: 20 }, (_, i) => `n${i}`)] } }, (r) => r.note !== 'fay' && r.note !== ''],
    ['json $contains of 8 elements', { tags: { $contains: ['a', 'b', 'b', 'a', 'a', 'b', 'a', 'b'] } }, (r) => r.name === 'ann'],
    // the reference's other operators
    ['$ncontains includes nulls', { note: { $ncontains: 'BOB' } }, (r) => !r.note?.toLowerCase().includes('bob')],
    ['$like is a whole-value pattern, case-sensitive, * any characters', { note: { $like: 'HAL*' } }, (r) => !!r.note?.startsWith('HAL')],
    ['$like does not match another case', { note: { $like: 'hal*' } }, () => false],
    ['$like with * inside', { note: { $like: 'Likes*cotton' } }, (r) => r.name === 'ann'],
    ['$like treats % and _ literally', { note: { $like: '*r_s*' } }, (r) => r.name === 'bob'],
    ['$like treats % literally (no match)', { note: { $like: 'Likes%' } }, () => false],
    ['$like without * is equality', { note: { $like: 'fay' } }, (r) => r.note === 'fay'],
    ['$ilike ignores case', { note: { $ilike: 'hal*' } }, (r) => !!r.note?.toLowerCase().startsWith('hal')],
    ['$nlike includes nulls', { note: { $nlike: '*o*' } }, (r) => !r.note?.includes('o')],
    ['$nilike includes nulls', { note: { $nilike: '*B*' } }, (r) => !r.note?.toLowerCase().includes('b')],
    ['select $ilike', { tier: { $ilike: 'G*D' } }, (r) => r.tier === 'gold'],
    ['$empty: no value or an empty string', { note: { $empty: true } }, (r) => r.note === undefined || r.note === ''],
    ['$empty false', { note: { $empty: 'false' } }, (r) => r.note !== undefined && r.note !== ''],
    ['json $empty: no value or []', { tags: { $empty: true } }, (r) => r.tags === undefined || (Array.isArray(r.tags) && r.tags.length === 0)],
    ['number $empty', { age: { $empty: true } }, (r) => r.age === undefined],
    // system fields
    ['createdAt $lte now', { createdAt: { $lte: new Date(Date.now() + 60_000).toISOString() } }, () => true],
    ['updatedAt $gt future', { updatedAt: { $gt: '2999-01-01' } }, () => false],
    ['createdAt $isNotNull', { createdAt: { $isNotNull: true } }, () => true],
  ];
  it.each(cases)('%s', async (_label, filter, pred) => {
    expect(await names(filter)).toEqual(inOrder(pred));
  });

  it('filters on id with equality, $in and $startsWith', async () => {
    const all = (await c.query(id, { limit: 1000 })).body.data.rows as { id: string; data: R }[];
    expect(await names({ id: all[2].id })).toEqual(['cat']);
    expect(await names({ id: { $in: [all[0].id, all[7].id] } })).toEqual(['ann', 'hal']);
    expect(await names({ id: { $startsWith: 'row_' } })).toEqual(rows.map((r) => r.name));
    expect(await names({ id: { $ne: all[0].id } })).toEqual(rows.slice(1).map((r) => r.name));
    expect(await names({ id: { $like: `${all[1].id.slice(0, -2)}*` } })).toEqual(['bob']);
    expect(await names({ id: { $ncontains: all[1].id.slice(4) } })).toEqual(rows.filter((r) => r.name !== 'bob').map((r) => r.name));
    expect(await names({ id: { $empty: true } })).toEqual([]);
  });

  it('includeTotal=false leaves out the count a filtered page would need, and pages on while pages are full', async () => {
    const filter = JSON.stringify({ active: { $isNotNull: true } });
    const matching = rows.filter((r) => r.active !== undefined).map((r) => r.name);
    const counted = await c.query(id, { filter, limit: 3 });
    expect(counted.body.data.totalCount).toBe(matching.length);
    const seen: string[] = [];
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const r = await c.query(id, { filter, limit: 3, offset, raw: '&includeTotal=false' });
      expect(r.status, r.text).toBe(200);
      seen.push(...r.body.data.rows.map((x: { data: R }) => x.data.name));
      // Unknown while the page is full; a short page tells the total itself.
      expect(r.body.data.totalCount).toBe(r.body.data.rows.length === 3 ? null : seen.length);
      offset = r.body.data.nextOffset;
      pages++;
    }
    expect(seen).toEqual(matching);
    expect(pages).toBe(Math.ceil(matching.length / 3) + (matching.length % 3 === 0 ? 1 : 0));
    // Without a filter the table's own row count answers, counted or not.
    expect((await c.query(id, { limit: 2, raw: '&includeTotal=0' })).body.data.totalCount).toBe(rows.length);
    expect((await c.query(id, { limit: 2, raw: '&includeTotal=maybe' })).status).toBe(400);
  });

  it('refuses the $like family on other types and with an empty pattern, naming the column', async () => {
    for (const [filter, message] of [
      [{ age: { $like: '3*' } }, /Operator \$like is not supported on number column "age"/],
      [{ note: { $ilike: '' } }, /\$ilike on "note" needs a non-empty string pattern/],
      [{ note: { $nlike: 5 } }, /\$nlike on "note" needs a non-empty string pattern/],
      [{ note: { $like: 'x'.repeat(257) } }, /longer than 256 characters/],
      [{ createdAt: { $like: '2026*' } }, /Operator \$like is not supported on "createdAt"/],
      [{ note: { $empty: 'yes' } }, /\$empty on "note" expects true or false/],
    ] as const) {
      const r = await c.query(id, { filter, limit: 10 });
      expect(r.status, JSON.stringify(filter)).toBe(400);
      expect(r.body.error).toMatch(message);
    }
  });
});

describe('combinations', () => {
  const cases: [string, unknown, (r: R) => boolean][] = [
    ['top-level keys are ANDed', { active: true, score: 7 }, (r) => r.active === true && r.score === 7],
    ['$or', { $or: [{ age: { $lt: 20 } }, { age: { $gt: 50 } }] }, (r) => r.age !== undefined && (r.age < 20 || r.age > 50)],
    ['$and', { $and: [{ tier: 'gold' }, { active: true }] }, (r) => r.tier === 'gold' && r.active === true],
    ['$or inside $and', { $and: [{ active: true }, { $or: [{ tier: 'gold' }, { note: { $isNull: true } }] }] },
      (r) => r.active === true && (r.tier === 'gold' || r.note === undefined)],
    ['$and inside $or', { $or: [{ $and: [{ age: { $gte: 25 } }, { age: { $lte: 30 } }] }, { name: 'gus' }] },
      (r) => (r.age !== undefined && r.age >= 25 && r.age <= 30) || r.name === 'gus'],
    ['$or beside a field', { score: 7, $or: [{ name: 'bob' }, { name: 'hal' }] }, (r) => r.score === 7 && (r.name === 'bob' || r.name === 'hal')],
    ['deeply nested', { $or: [{ $or: [{ $and: [{ $or: [{ name: 'ann' }, { name: 'bob' }] }, { active: true }] }] }, { tier: 'bronze', age: { $lt: 20 } }] },
      (r) => (['ann', 'bob'].includes(r.name) && r.active === true) || (r.tier === 'bronze' && r.age !== undefined && r.age < 20)],
    ['every type at once', {
      name: { $nin: ['zzz'] }, age: { $gte: 18 }, active: { $in: [true, false] }, born: { $lt: '2010-01-01' }, tier: { $ne: 'bronze' }, tags: { $isNotNull: true },
    }, (r) => r.age !== undefined && r.active !== undefined && r.born !== undefined && r.tier !== 'bronze' && r.tags !== undefined],
  ];
  it.each(cases)('%s', async (_label, filter, pred) => {
    expect(await names(filter)).toEqual(inOrder(pred));
  });
});

describe('a filter that reads each row once', () => {
  // Three or more reads of a row's data: the statement reads each row's data once (docs/architecture.md,
  // Tables: bounded statements). Sorting, paging, counting, updating and deleting take that path too.
  const heavy = { $and: [{ note: { $ne: 'x' } }, { tier: { $ne: 'gold' } }, { age: { $gte: 20 } }] };
  const pred = (r: R) => r.tier !== 'gold' && (r.age ?? -1) >= 20;

  it('sorts and pages, and counts every match', async () => {
    const expected = rows.filter(pred).sort((a, b) => (b.age ?? 0) - (a.age ?? 0) || rows.indexOf(a) - rows.indexOf(b)).map((r) => r.name);
    const page = await c.query(id, { filter: heavy, sort: { age: 'desc' }, limit: 2, offset: 1 });
    expect(page.status).toBe(200);
    expect(page.body.data.rows.map((x: { data: R }) => x.data.name)).toEqual(expected.slice(1, 3));
    expect(page.body.data.totalCount).toBe(expected.length);
  });

  it('updates and deletes the rows it matches, and only those', async () => {
    const other = await c.createTable('people_heavy', [
      { name: 'name', type: 'string' }, { name: 'age', type: 'number' }, { name: 'tier', type: 'string' }, { name: 'note', type: 'string' },
    ]);
    expect((await c.insertMany(other, rows.map(({ name, age, tier, note }) => ({ name, age, tier, note })))).status).toBe(200);
    const put = await c.call('PUT', `/api/v1/tables/${other}/rows`, { workspaceId: c.workspaceId, filter: heavy, data: { note: 'seen' } });
    expect(put.status).toBe(200);
    expect(put.body.data.updatedCount).toBe(rows.filter(pred).length);
    const seen = (await c.query(other, { filter: { note: 'seen' }, limit: 100 })).body.data.rows.map((x: { data: R }) => x.data.name);
    expect(seen).toEqual(inOrder(pred));
    const del = await c.call('DELETE', `/api/v1/tables/${other}/rows`, {
      workspaceId: c.workspaceId, filter: { $and: [{ note: 'seen' }, { age: { $gte: 30 } }, { name: { $ne: 'x' } }] },
    });
    expect(del.status).toBe(200);
    const left = (await c.query(other, { limit: 100 })).body.data.rows.map((x: { data: R }) => x.data.name);
    expect(left).toEqual(inOrder((r) => !(pred(r) && (r.age ?? 0) >= 30)));
  });
});

describe('sort', () => {
  it('sorts numbers numerically with nulls last in both directions and a stable tiebreak', async () => {
    expect(await names(undefined, { score: 'asc' })).toEqual(['gus', 'eve', 'bob', 'cat', 'hal', 'ann', 'Fay', 'dan']);
    expect(await names(undefined, { score: 'desc' })).toEqual(['Fay', 'ann', 'bob', 'cat', 'hal', 'eve', 'gus', 'dan']);
  });

  it('sorts by several keys in key order', async () => {
    expect(await names(undefined, { score: 'desc', name: 'desc' })).toEqual(['Fay', 'ann', 'hal', 'cat', 'bob', 'eve', 'gus', 'dan']);
    expect(await names({ age: { $isNotNull: true } }, { age: 'asc', name: 'DESC' })).toEqual(['gus', 'dan', 'bob', 'ann', 'hal', 'cat', 'Fay']);
  });

  it('sorts dates chronologically whatever their notation', async () => {
    expect(await names({ born: { $isNotNull: true } }, { born: 'asc' })).toEqual(['Fay', 'cat', 'hal', 'ann', 'dan', 'bob', 'gus']);
  });

  it('sorts strings by code point, booleans false first, and by system fields', async () => {
    expect(await names(undefined, { name: 'asc' })).toEqual(['Fay', 'ann', 'bob', 'cat', 'dan', 'eve', 'gus', 'hal']);
    expect(await names({ active: { $isNotNull: true } }, { active: 'asc' })).toEqual(['bob', 'dan', 'gus', 'ann', 'cat', 'eve', 'hal']);
    expect(await names(undefined, { createdAt: 'desc' })).toEqual(rows.map((r) => r.name));
    expect(await names(undefined, { updatedAt: 'asc', id: 'asc' })).toHaveLength(8);
  });

  it('uses a descending range sort that stays correct on non-null columns', async () => {
    expect(await names({ age: { $gt: 20 } }, { age: 'desc' })).toEqual(['Fay', 'cat', 'hal', 'ann', 'bob', 'dan']);
  });
});

describe('pagination', () => {
  it('pages with limit and offset; totalCount is exact', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 10; offset += 3) {
      const r = await c.query(id, { sort: { age: 'asc' }, limit: 3, offset });
      expect(r.status).toBe(200);
      expect(r.body.data.totalCount).toBe(8);
      expect(r.body.data.limit).toBe(3);
      expect(r.body.data.offset).toBe(offset);
      expect(r.body.data.rowCount).toBe(r.body.data.rows.length);
      seen.push(...r.body.data.rows.map((x: { data: R }) => x.data.name));
    }
    expect(seen).toEqual(await names(undefined, { age: 'asc' }));
    const filtered = await c.query(id, { filter: { active: true }, limit: 2, offset: 1 });
    expect(filtered.body.data.totalCount).toBe(4);
    expect(filtered.body.data.rowCount).toBe(2);
    const past = await c.query(id, { filter: { active: true }, limit: 2, offset: 50 });
    expect(past.body.data).toMatchObject({ rows: [], rowCount: 0, totalCount: 4 });
    const pastAll = await c.query(id, { offset: 50 });
    expect(pastAll.body.data).toMatchObject({ rows: [], totalCount: 8 });
  });

  it('defaults to limit 100, offset 0 and table order', async () => {
    const r = await c.query(id);
    expect(r.body.data).toMatchObject({ limit: 100, offset: 0, rowCount: 8, totalCount: 8 });
    expect(r.body.data.rows.map((x: { position: number }) => x.position)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('bad filters, sorts and bounds are 400', () => {
  const bad: [string, Parameters<TablesClient['query']>[1], RegExp][] = [
    ['limit 0', { limit: 0 }, /Limit must be at least 1/],
    ['limit 1001', { limit: 1001 }, /Limit cannot exceed 1000/],
    ['limit 1.5', { limit: '1.5' }, /Limit must be an integer/],
    ['limit abc', { limit: 'abc' }, /Limit must be an integer/],
    ['offset -1', { offset: -1 }, /Offset must be at least 0/],
    ['offset abc', { offset: 'abc' }, /Offset must be an integer/],
    ['malformed filter JSON', { filter: '{"age":' }, /Invalid filter JSON/],
    ['filter not an object', { filter: '[1,2]' }, /filter must be a JSON object/],
    ['filter a string', { filter: '"x"' }, /filter must be a JSON object/],
    ['malformed sort JSON', { sort: '{age' }, /Invalid sort JSON/],
    ['unknown column in filter', { filter: { ghost: 1 } }, /Unknown column "ghost" in filter/],
    ['unknown column nested in $or', { filter: { $or: [{ age: 1 }, { ghost: 2 }] } }, /Unknown column "ghost" in filter/],
    ['unknown column in sort', { sort: { ghost: 'asc' } }, /Unknown column "ghost" in sort/],
    ['bad sort direction', { sort: { age: 'up' } }, /Invalid sort direction for "age"/],
    ['unknown operator', { filter: { age: { $regex: '.*' } } }, /Invalid operator "\$regex"/],
    ['unknown top-level operator', { filter: { $not: { age: 1 } } }, /Invalid operator "\$not"/],
    ['operators mixed with keys', { filter: { age: { $gt: 1, x: 2 } } }, /mixes operators/],
    ['$or not an array', { filter: { $or: { age: 1 } } }, /\$or expects a non-empty array/],
    ['$and empty', { filter: { $and: [] } }, /\$and expects a non-empty array/],
    ['$or of non-objects', { filter: { $or: [1] } }, /array of filter objects/],
    ['range on boolean', { filter: { active: { $gt: true } } }, /\$gt is not supported on boolean column "active"/],
    ['range on json', { filter: { tags: { $lt: 1 } } }, /not supported on json column "tags"/],
    ['range on select', { filter: { tier: { $gt: 'gold' } } }, /not supported on select column "tier"/],
    ['number range with text', { filter: { age: { $gt: 'old' } } }, /\$gt on column "age"/],
    ['date range with a non-date', { filter: { born: { $lt: 'yesterday' } } }, /\$lt on column "born"/],
    ['equality with the wrong type', { filter: { age: 'twelve' } }, /column "age"/],
    ['select value not an option', { filter: { tier: 'platinum' } }, /column "tier"/],
    ['$in not an array', { filter: { age: { $in: 5 } } }, /\$in on column "age" expects an array/],
    ['$contains on number', { filter: { age: { $contains: '1' } } }, /not supported on number column "age"/],
    ['$contains empty', { filter: { name: { $contains: '' } } }, /non-empty string/],
    ['$startsWith on json', { filter: { tags: { $startsWith: 'a' } } }, /not supported on json column/],
    ['$isNull not a boolean', { filter: { age: { $isNull: 'maybe' } } }, /expects true or false/],
    ['bad field name', { filter: { 'a-b': 1 } }, /Invalid field name/],
    ['system field with bad date', { filter: { createdAt: { $gt: 'soon' } } }, /createdAt/],
    ['too deep', { filter: JSON.parse('{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"age":1}]}]}]}]}]}]}]}]}]}]}]}') }, /nested deeper/],
    ['too many conditions', { filter: { $or: Array.from({ length: 201 }, (_, i) => ({ age: i })) } }, /more than 200 conditions/],
    ['a substring operand past 256 characters', { filter: { note: { $contains: 'x'.repeat(257) } } }, /"note" is longer than 256 characters/],
    ['an id pattern with a NUL character', { filter: { id: { $contains: 'row_\u0000' } } }, /"id": text contains a NUL character/],
    ['an id with an unpaired surrogate', { filter: { id: { $in: ['row_1', '\uD800'] } } }, /\$in on "id": text contains a NUL character or an unpaired surrogate/],
    ['an id pattern past 256 characters', { filter: { id: { $startsWith: 'x'.repeat(257) } } }, /"id" is longer than 256 characters/],
    ['a json $contains past 8 array elements', { filter: { tags: { $contains: { k: Array.from({ length: 9 }, (_, i) => i) } } } }, /more than 8 array elements/],
    ['too many sort keys', { sort: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [i % 2 ? 'age' + i : 'name' + i, 'asc'])) }, /sort has more than 10 keys|Unknown column/],
  ];
  it.each(bad)('%s', async (_label, q, message) => {
    const r = await c.query(id, q);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(message);
  });

  it('a filter value that looks like SQL is just a value', async () => {
    expect(await names({ name: "x' OR '1'='1" })).toEqual([]);
    expect(await names({ note: { $contains: "'; DROP TABLE table_rows; --" } })).toEqual([]);
    expect((await c.query(id)).body.data.totalCount).toBe(8);
  });

  it('filter and sort may repeat in the query string only once', async () => {
    const r = await c.query(id, { raw: '&limit=5&limit=6' });
    expect(r.status).toBe(400);
  });
});
