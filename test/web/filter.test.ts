// The tables filter builder (web/src/pages/tables/filter.ts): operators per column type, and conditions
// translated into the Tables API's filter, incomplete ones left out.
import { describe, expect, it } from 'vitest';
import type { Column } from '../../web/src/pages/tables/api';
import { opsFor, toFilter, type Condition } from '../../web/src/pages/tables/filter';

const col = (name: string, type: Column['type']): Column => ({ id: `col_${name}`, name, type, required: false, unique: false });
const columns = [col('name', 'string'), col('age', 'number'), col('active', 'boolean'), col('meta', 'json'), col('tier', 'select')];
let next = 0;
const cond = (column: string, op: string, value = ''): Condition => ({ id: next++, column, op, value });

describe('opsFor', () => {
  it('offers comparisons for numbers and dates, text matches for strings, and emptiness for all', () => {
    expect(opsFor('number').map((o) => o.op)).toEqual(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$isNull', '$isNotNull']);
    expect(opsFor('date').map((o) => o.op)).toContain('$gte');
    expect(opsFor('string').map((o) => o.op)).toEqual(['$contains', '$eq', '$ne', '$startsWith', '$endsWith', '$isNull', '$isNotNull']);
    expect(opsFor('boolean').map((o) => o.op)).toEqual(['$eq', '$isNull', '$isNotNull']);
    expect(opsFor('json').find((o) => o.op === '$isNull')?.needsValue).toBe(false);
  });
});

describe('toFilter', () => {
  it('is undefined without a complete condition', () => {
    expect(toFilter([], columns, 'all')).toBeUndefined();
    expect(toFilter([cond('name', '$eq', ''), cond('age', '$gt', 'ten'), cond('gone', '$eq', 'x')], columns, 'all')).toBeUndefined();
  });

  it('gives one condition bare, with its operand typed by the column', () => {
    expect(toFilter([cond('age', '$gte', '18')], columns, 'all')).toEqual({ age: { $gte: 18 } });
    expect(toFilter([cond('active', '$eq', 'false')], columns, 'any')).toEqual({ active: { $eq: false } });
    expect(toFilter([cond('name', '$isNull')], columns, 'all')).toEqual({ name: { $isNull: true } });
  });

  it('parses JSON for a JSON contains, and falls back to the text', () => {
    expect(toFilter([cond('meta', '$contains', '{"a":1}')], columns, 'all')).toEqual({ meta: { $contains: { a: 1 } } });
    expect(toFilter([cond('meta', '$contains', 'word')], columns, 'all')).toEqual({ meta: { $contains: 'word' } });
  });

  it('joins several conditions with $and or $or', () => {
    const cs = [cond('name', '$startsWith', 'A'), cond('tier', '$ne', 'free'), cond('age', '$lt', '')];
    expect(toFilter(cs, columns, 'all')).toEqual({ $and: [{ name: { $startsWith: 'A' } }, { tier: { $ne: 'free' } }] });
    expect(toFilter(cs, columns, 'any')).toEqual({ $or: [{ name: { $startsWith: 'A' } }, { tier: { $ne: 'free' } }] });
  });
});
