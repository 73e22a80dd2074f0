import { describe, expect, it } from 'vitest';
import {
  type Column, CellError, coerceCell, coerceDate, columnMap, normalizeColumn, normalizeColumns, prepareRow,
} from '../../src/tables/columns.js';
import { HttpError } from '../../src/http/errors.js';

const col = (type: Column['type'], extra: Partial<Column> = {}): Column => ({ name: 'c', type, required: false, unique: false, ...extra });

describe('coerceCell', () => {
  const ok: [Column['type'], unknown, unknown][] = [
    ['string', 'a', 'a'], ['string', 3, '3'], ['string', false, 'false'],
    ['number', 3, 3], ['number', '3.5', 3.5], ['number', '-1e2', -100], ['number', -0, 0], ['number', '.5', 0.5],
    ['boolean', true, true], ['boolean', 'False', false],
    ['date', '2000-02-29', '2000-02-29'], ['date', '2024-01-01T00:00:00-05:30', '2024-01-01T05:30:00.000Z'],
    ['date', '2024/01/15', '2024-01-15'], ['date', 'Jan 15, 2024', '2024-01-15'], ['date', '01/15/2024', '2024-01-15'],
    ['date', '2024-1-1', '2024-01-01'], ['date', '2024', '2024-01-01'], ['date', '2024-02', '2024-02-01'],
    ['date', 'Tuesday, January 16, 2024', '2024-01-16'], ['date', 'Jan 15, 2024 10:30', '2024-01-15T10:30:00.000Z'],
    ['date', 'Jan 15, 2024 10:30 PM GMT+0200', '2024-01-15T20:30:00.000Z'],
    ['date', 'Mon Jan 15 2024 10:30:00 GMT+0100 (Central European Standard Time)', '2024-01-15T09:30:00.000Z'],
    ['date', '2024-01-15 10:30:00 +05:30', '2024-01-15T05:00:00.000Z'],
    ['string', 'x'.repeat(20_000), 'x'.repeat(20_000)],
    ['date', '2024-01-01t10:00:00z', '2024-01-01T10:00:00.000Z'], ['date', 0, '1970-01-01T00:00:00.000Z'],
    ['json', null, null], ['json', { a: [1] }, { a: [1] }],
  ];
  it.each(ok)('%s accepts %j as %j', (type, input, out) => {
    expect(coerceCell(col(type), input)).toEqual(out);
  });

  const bad: [Column['type'], unknown][] = [
    ['string', {}], ['string', null], ['string', '\u0000'], ['string', '\udc00'],
    ['number', 'NaN'], ['number', '1,5'], ['number', '1e999'], ['number', Infinity], ['number', null], ['number', '+'],
    ['boolean', 'on'], ['boolean', 1],
    ['date', '1900-02-29'], ['date', '10000-01-01'], ['date', '0000-01-01'], ['date', '2024-01-01T10:00:00+25:00'],
    ['date', 'Monday'], ['date', NaN], ['date', -1e15],
    // Date.parse reads these as 2001-01-01, 2001-12-01 and 2001-01-05; a day past the month's end is not rolled over.
    ['date', '1'], ['date', '12'], ['date', '1.5'], ['date', 'Feb 30, 2024'], ['date', '02/30/2024'], ['date', '2024/02/30'],
    ['date', '2024-13'], ['date', 'Jan 1, 10000'], ['date', `Jan 15, 2024${' '.repeat(200)}x`],
    ['json', { k: '\u0000' }], ['json', { ['\ud800']: 1 }],
  ];
  it.each(bad)('%s refuses %j', (type, input) => {
    expect(() => coerceCell(col(type), input)).toThrow(CellError);
  });

  it('matches select options exactly, then case-insensitively, else refuses listing them', () => {
    const s = col('select', { options: [{ id: 'Gold', name: 'Gold' }, { id: 'gold2', name: 'gold2' }] });
    expect(coerceCell(s, 'Gold')).toBe('Gold');
    expect(coerceCell(s, 'gOLD')).toBe('Gold');
    expect(() => coerceCell(s, 'silver')).toThrow(/not one of the options \("Gold", "gold2"\)/);
  });

  it('stores a select option\'s id, taken by id, then name, then name in any case; lists with multiple', () => {
    const options = [{ id: 'o1', name: 'Red' }, { id: 'Blue', name: 'o1x' }, { id: 'o3', name: 'Blue' }];
    const s = col('select', { options });
    expect(coerceCell(s, 'o1')).toBe('o1');
    expect(coerceCell(s, 'Blue')).toBe('Blue');
    expect(coerceCell(s, ' red ')).toBe('o1');
    expect(() => coerceCell(s, ['o1'])).toThrow(/expected one of the options, got an array/);
    const m = col('select', { options, multiple: true });
    expect(coerceCell(m, ['red', 'o3', 'o1'])).toEqual(['o1', 'o3']);
    expect(coerceCell(m, 'Red')).toEqual(['o1']);
    expect(coerceCell(m, [])).toEqual([]);
    expect(() => coerceCell(m, ['Red', 'Green'])).toThrow(/"Green" is not one of the options \("Red", "o1x", "Blue"\)/);
  });

  it('limits json nesting', () => {
    const deep = JSON.parse('['.repeat(70) + ']'.repeat(70));
    expect(() => coerceCell(col('json'), deep)).toThrow(/nested deeper than 64/);
    expect(coerceCell(col('json'), JSON.parse('['.repeat(60) + ']'.repeat(60)))).toBeDefined();
  });

  it('normalises every accepted date to a form that sorts and compares as an instant', () => {
    expect(coerceDate('2024-06-30T23:59:59.999+00:00')).toBe('2024-06-30T23:59:59.999Z');
    expect(coerceDate('Sun, 30 Jun 2024 23:59:59 +0200')).toBe('2024-06-30T21:59:59.000Z');
  });

  it("reads other date strings the same whatever the server's time zone", () => {
    const zone = process.env.TZ;
    try {
      for (const tz of ['America/New_York', 'Asia/Kolkata', 'Pacific/Kiritimati', 'UTC']) {
        // Node applies a change of TZ at once.
        process.env.TZ = tz;
        expect(coerceDate('Jan 15, 2024'), tz).toBe('2024-01-15');
        expect(coerceDate('01/15/2024'), tz).toBe('2024-01-15');
        expect(coerceDate('15 January 2024 GMT'), tz).toBe('2024-01-15');
        expect(coerceDate('Jan 15, 2024 10:30'), tz).toBe('2024-01-15T10:30:00.000Z');
        expect(coerceDate('Jan 15, 2024 10:30 UTC'), tz).toBe('2024-01-15T10:30:00.000Z');
        expect(coerceDate('Jan 15, 2024 10:30 EST'), tz).toBe('2024-01-15T15:30:00.000Z');
        expect(() => coerceDate('Jan 32, 2024'), tz).toThrow(CellError);
      }
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });
});

describe('column definitions', () => {
  const err = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(HttpError);
      return (e as HttpError).message;
    }
    throw new Error('expected an error');
  };

  it('normalises flags to booleans and keeps select options', () => {
    expect(normalizeColumn({ name: 'a', type: 'string' })).toEqual({ name: 'a', type: 'string', required: false, unique: false });
    expect(normalizeColumn({ name: '_b2', type: 'select', options: [' x ', { name: 'y' }, { id: 'z1', name: ' z ' }], required: true }))
      .toEqual({
        name: '_b2', type: 'select', required: true, unique: false, multiple: false,
        options: [{ id: 'x', name: 'x' }, { id: 'y', name: 'y' }, { id: 'z1', name: 'z' }],
      });
    // An option without an id keeps the id of the option of the same name before the change, unless another claims it.
    expect(normalizeColumn({ name: 'c', type: 'select', options: ['Red', { name: 'Blue' }, 'New'], multiple: true }, {
      previousOptions: [{ id: 'r', name: 'Red' }, { id: 'b', name: 'Blue' }],
    }).options).toEqual([{ id: 'r', name: 'Red' }, { id: 'b', name: 'Blue' }, { id: 'New', name: 'New' }]);
  });

  it('refuses bad names, types and options', () => {
    expect(err(() => normalizeColumn({ name: '2a', type: 'string' }))).toMatch(/Invalid column name "2a"/);
    expect(err(() => normalizeColumn({ name: 'id', type: 'string' }))).toBe('Column name "id" is reserved');
    expect(err(() => normalizeColumn({ name: 'UpdatedAt', type: 'string' }))).toMatch(/reserved/);
    expect(err(() => normalizeColumn({ name: 'x'.repeat(51), type: 'string' }))).toMatch(/1 to 50 characters/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'money' as never }))).toMatch(/Invalid column type "money"/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'select', options: [] }))).toMatch(/at least one option/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'select', options: Array.from({ length: 101 }, (_, i) => `o${i}`) }))).toMatch(/more than 100/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'select', options: [''] }))).toMatch(/1 to 100 characters/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'select', options: ['x'], unique: true }))).toBe('Select column "a" cannot be unique');
    expect(err(() => normalizeColumn({ name: 'a', type: 'select', options: [{ id: 'x', name: 'A' }, 'x'] }))).toMatch(/duplicate option id "x"/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'select', options: [{ id: '', name: 'A' }] }))).toMatch(/option ids must be 1 to 100/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'select', options: [{ id: 'x'.repeat(101), name: 'A' }] }))).toMatch(/option ids must be 1 to 100/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'select', options: [{ name: 'A' }, 'a'] }))).toMatch(/duplicate option "a"/);
    expect(err(() => normalizeColumn({ name: 'a', type: 'string', multiple: false }))).toBe('Column "a": multiple is only allowed for select columns');
    expect(err(() => normalizeColumns([]))).toMatch(/at least one column/);
    expect(err(() => normalizeColumns([{ name: 'a', type: 'string' }, { name: 'A', type: 'string' }]))).toMatch(/duplicate column name "A"/);
  });
});

describe('prepareRow', () => {
  const columns = columnMap([
    { name: 'email', type: 'string', required: true, unique: true },
    { name: 'age', type: 'number', required: false, unique: false },
  ]);

  it('coerces a full row and reports missing required columns and unknown keys', () => {
    expect(prepareRow(columns, { email: 'a', age: '3' }, { full: true, path: ['data'] })).toEqual({ row: { set: { email: 'a', age: 3 }, unset: [] }, issues: [] });
    const r = prepareRow(columns, { age: 'x', zip: 1 }, { full: true, path: ['rows', 4], row: 4 });
    expect(r.issues.map((i) => [i.code, i.column, i.path, i.row])).toEqual([
      ['invalid_type', 'age', ['rows', 4, 'age'], 4],
      ['unknown_column', 'zip', ['rows', 4, 'zip'], 4],
      ['required', 'email', ['rows', 4, 'email'], 4],
    ]);
  });

  it('in a patch, null clears optional columns and required columns may be absent', () => {
    expect(prepareRow(columns, { age: null }, { full: false, path: ['data'] })).toEqual({ row: { set: {}, unset: ['age'] }, issues: [] });
    expect(prepareRow(columns, { email: null }, { full: false, path: ['data'] }).issues[0].message).toBe('Missing required field: email');
  });

  it('checks the row size of full rows', () => {
    const big = columnMap([{ name: 's', type: 'json', required: false, unique: false }]);
    expect(prepareRow(big, { s: 'x'.repeat(400_000) }, { full: true, path: ['data'] }).issues).toEqual([]);
    const r = prepareRow(big, { s: 'x'.repeat(410_000) }, { full: true, path: ['data'] });
    expect(r.issues[0].message).toMatch(/Row size exceeds limit \(410008 bytes > 409600 bytes\)/);
  });
});
