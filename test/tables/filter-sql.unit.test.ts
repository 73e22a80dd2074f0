import { describe, expect, it } from 'vitest';
import type { Column } from '../../src/tables/columns.js';
import {
  FilterError, SqlParams, compileFilter, compileSort, parseJsonObjectParam, typedExpression, uniqueExpression,
} from '../../src/tables/filter-sql.js';

const columns: Column[] = [
  { name: 'name', type: 'string', required: false, unique: false },
  { name: 'age', type: 'number', required: false, unique: false },
  { name: 'ok', type: 'boolean', required: false, unique: false },
  { name: 'born', type: 'date', required: false, unique: false },
  { name: 'meta', type: 'json', required: false, unique: false },
  { name: 'tier', type: 'select', required: false, unique: false, options: [{ id: 'gold', name: 'gold' }, { id: 'silver', name: 'silver' }], multiple: false },
  { name: 'tags', type: 'select', required: false, unique: false, options: [{ id: 't2', name: 'Alpha' }, { id: 't1', name: 'beta' }], multiple: true },
];

function compile(filter: Record<string, unknown>) {
  const params = new SqlParams(['tbl_x']);
  const f = compileFilter(filter, columns, params, 'r');
  return { sql: f.sql, params: params.values, nonNull: f.nonNull, dataReads: f.dataReads };
}

function error(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    // A typed error of the pure compiler (the HTTP edge answers it with a 400 carrying the message).
    expect(err).toBeInstanceOf(FilterError);
    return (err as FilterError).message;
  }
  throw new Error('expected a FilterError');
}

describe('compileFilter', () => {
  it('compiles scalar equality to jsonb containment with the value as a parameter', () => {
    const c = compile({ name: 'ann' });
    expect(c.sql).toBe('r.data @> $2::jsonb');
    expect(c.params).toEqual(['tbl_x', '{"name":"ann"}']);
  });

  it('never puts values into the SQL text', () => {
    const evil = "x'); DROP TABLE tables; --";
    const c = compile({ $or: [{ name: evil }, { name: { $contains: evil } }, { name: { $gt: evil } }, { meta: { a: evil } }] });
    expect(c.sql).not.toContain('DROP');
    expect(c.params.join(' ')).toContain('DROP');
  });

  it('coerces operands through the column type', () => {
    expect(compile({ age: '30' }).params[1]).toBe('{"age":30}');
    expect(compile({ ok: 'TRUE' }).params[1]).toBe('{"ok":true}');
    expect(compile({ tier: 'GOLD' }).params[1]).toBe('{"tier":"gold"}');
  });

  it('compares numbers and dates through the indexed typed expressions', () => {
    const n = compile({ age: { $gte: 18, $lt: '65' } });
    expect(n.sql).toBe("(((r.data->'age')::numeric) >= $2::numeric AND ((r.data->'age')::numeric) < $3::numeric)");
    expect(n.params.slice(1)).toEqual([18, 65]);
    const d = compile({ born: { $gt: '2020-01-01' } });
    expect(d.sql).toBe("weft_table_ts(r.data->>'born') > $2::timestamptz");
    expect(d.params[1]).toBe('2020-01-01T00:00:00.000Z');
    // The index expressions are the same without the alias.
    expect(typedExpression(columns[1])).toBe("((data->'age')::numeric)");
    expect(typedExpression(columns[3])).toBe("weft_table_ts(data->>'born')");
    expect(uniqueExpression(columns[0])).toBe("(data->'name')");
    expect(uniqueExpression(columns[3])).toBe("weft_table_ts(data->>'born')");
  });

  it('keeps $ne / $nin true for null cells', () => {
    expect(compile({ age: { $ne: 3 } }).sql).toBe('NOT COALESCE(r.data @> $2::jsonb, FALSE)');
    expect(compile({ age: { $nin: [1, 2] } }).sql).toBe('NOT COALESCE((r.data @> $2::jsonb OR r.data @> $3::jsonb), FALSE)');
    expect(compile({ born: { $ne: '2020-01-01' } }).sql).toContain('NOT COALESCE(weft_table_ts');
  });

  it('matches substrings with a literal or escaped regular expression, case-insensitively', () => {
    const c = compile({ name: { $contains: '50%_off\\' } });
    expect(c.sql).toBe("(r.data->>'name') ~* $2");
    expect(c.params[1]).toBe('***=50%_off\\');
    expect(compile({ name: { $startsWith: 'a.b(c)[d]{e}*+?|^$\\' } }).params[1]).toBe('^a\\.b\\(c\\)\\[d\\]\\{e\\}\\*\\+\\?\\|\\^\\$\\\\');
    expect(compile({ name: { $endsWith: 'z.' } }).params[1]).toBe('z\\.$');
    // id patterns stay LIKE (ids are short), with the wildcards escaped.
    expect(compile({ id: { $contains: '50%_' } }).params[1]).toBe('%50\\%\\_%');
  });

  it('bounds the operands whose cost grows with their size', () => {
    expect(compile({ name: { $contains: 'x'.repeat(256) } }).params[1]).toBe(`***=${'x'.repeat(256)}`);
    expect(error(() => compile({ name: { $contains: 'x'.repeat(257) } }))).toBe('$contains on column "name" is longer than 256 characters');
    expect(compile({ meta: { $contains: { a: [1, 2, 3, 4], b: [[5, 6], 7] } } }).sql).toBe("r.data->'meta' @> $2::jsonb");
    expect(error(() => compile({ meta: { $contains: { a: [1, 2, 3, 4], b: [[5, 6, 7], 8] } } }))).toBe('$contains on column "meta" has more than 8 array elements');
  });

  it('compiles a long $in list to one read of the cell, a short one to containments', () => {
    const short = compile({ age: { $in: [1, 2, 3, 4, 5, 6, 7, 8] } });
    expect(short.sql.match(/@>/g)).toHaveLength(8);
    expect(short.dataReads).toBe(8);
    const long = compile({ age: { $nin: [1, 2, 3, 4, 5, 6, 7, 8, 9] } });
    expect(long.sql).toBe("NOT COALESCE(r.data->'age' = ANY($2::jsonb[]), FALSE)");
    expect(long.params[1]).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9']);
    expect(long.dataReads).toBe(1);
  });

  it('counts the reads of the row data, and reads user columns through their own alias', () => {
    expect(compile({}).dataReads).toBe(0);
    expect(compile({ id: 'row_1', createdAt: { $gt: '2020-01-01' } }).dataReads).toBe(0);
    // A column named "data" is quoted where it is read, so it counts once.
    const dataColumn: Column[] = [{ name: 'data', type: 'string', required: false, unique: false }];
    expect(compileFilter({ data: { $ne: 'x' } }, dataColumn, new SqlParams(), 'r').dataReads).toBe(1);
    expect(compileFilter({ data: { $contains: 'x' } }, dataColumn, new SqlParams(), 'r').sql).toBe("(r.data->>'data') ~* $1");
    expect(compile({ name: 'x', age: { $gt: 1, $lt: 9 }, born: { $isNull: true } }).dataReads).toBe(4);
    const params = new SqlParams(['tbl_x']);
    const f = compileFilter({ id: 'row_1', name: 'x', age: { $gt: 1 } }, columns, params, 'r', 'd');
    expect(f.sql).toBe("(r.id = $2::text AND d.data @> $3::jsonb AND ((d.data->'age')::numeric) > $4::numeric)");
    expect(f.dataReads).toBe(2);
  });

  it('nests $and / $or and tracks which columns the top-level conjunction makes non-null', () => {
    const c = compile({ age: { $gt: 1 }, $and: [{ born: { $isNotNull: true } }], $or: [{ name: 'a' }, { tier: 'gold' }] });
    expect(c.sql).toMatch(/^\(.* AND .* AND \(.* OR .*\)\)$/);
    expect([...c.nonNull].sort()).toEqual(['age', 'born']);
    expect([...compile({ age: { $ne: 1 } }).nonNull]).toEqual([]);
  });

  it('compiles system fields to real columns', () => {
    expect(compile({ id: 'row_1' }).sql).toBe('r.id = $2::text');
    expect(compile({ createdAt: { $gte: '2024-01-01' } }).sql).toBe('r.created_at >= $2::timestamptz');
    expect(compile({ updatedAt: { $in: ['2024-01-01'] } }).sql).toBe('r.updated_at = ANY($2::timestamptz[])');
  });

  it('an empty filter is TRUE', () => {
    expect(compile({}).sql).toBe('TRUE');
    const p = new SqlParams();
    expect(compileFilter(undefined, columns, p).sql).toBe('TRUE');
  });

  it('compares select cells by option id (names coerced), a multiple select\'s by membership', () => {
    expect(compile({ tags: 'BETA' })).toMatchObject({ sql: 'r.data @> $2::jsonb', params: ['tbl_x', '{"tags":["t1"]}'] });
    expect(compile({ tags: { $contains: ['alpha', 't1'] } }).params[1]).toBe('{"tags":["t2","t1"]}');
    expect(compile({ tags: { $ne: 't2' } }).sql).toBe('NOT COALESCE(r.data @> $2::jsonb, FALSE)');
    expect(compile({ tags: { $in: Array.from({ length: 9 }, () => 'beta') } }).sql).toBe("r.data->'tags' ?| $2::text[]");
    // Substring operators look for option names; the cells are compared with the ids found.
    expect(compile({ tier: { $startsWith: 'SIL' } })).toMatchObject({ sql: "(r.data->>'tier') = ANY($2::text[])", params: ['tbl_x', ['silver']] });
    expect(compile({ tags: { $nlike: '*a' } }).sql).toBe("NOT COALESCE(r.data->'tags' ?| $2::text[], FALSE)");
    expect(compile({ tier: { $contains: 'zzz' } }).sql).toBe('FALSE');
    expect(error(() => compile({ tags: 'gamma' }))).toMatch(/^Invalid value for \$eq on column "tags" \(select\): "gamma" is not one of the options/);
    expect(error(() => compile({ tier: { $lte: 'gold' } }))).toBe('Operator $lte is not supported on select column "tier"');
  });

  it('refuses unknown columns and operators, naming them', () => {
    expect(error(() => compile({ ghost: 1 }))).toBe('Unknown column "ghost" in filter');
    expect(error(() => compile({ age: { $between: [1, 2] } }))).toMatch(/^Invalid operator "\$between"/);
    expect(error(() => compile({ "a'b": 1 }))).toMatch(/Invalid field name/);
  });
});

describe('compileSort', () => {
  it('orders by typed expressions with nulls last and ends with the position', () => {
    expect(compileSort({ age: 'desc', name: 'asc' }, columns, new Set(), 'r'))
      .toBe(`((r.data->'age')::numeric) DESC NULLS LAST, ((r.data->>'name') COLLATE "C") ASC, r.position ASC`);
    expect(compileSort(undefined, columns)).toBe('position ASC');
  });

  it('orders select columns by option name (a list by its first option), ids embedded as escaped literals', () => {
    expect(compileSort({ tags: 'asc' }, columns, new Set(), 'r'))
      .toBe(`array_position(ARRAY[E't2', E't1']::text[], (r.data->'tags'->>0)) ASC, r.position ASC`);
    const odd: Column = { name: 'o', type: 'select', required: false, unique: false, options: [{ id: "b'\\", name: 'b' }, { id: 'a', name: 'a' }] };
    expect(compileSort({ o: 'desc' }, [odd])).toBe(`array_position(ARRAY[E'a', E'b''\\\\']::text[], (data->>'o')) DESC NULLS LAST, position ASC`);
  });

  it('uses the index-friendly null placement when the filter excludes nulls', () => {
    expect(compileSort({ age: 'desc' }, columns, new Set(['age']), 'r')).toBe(`((r.data->'age')::numeric) DESC, r.position ASC`);
  });

  it('accepts 1 / -1 and system fields; refuses unknown columns and directions', () => {
    expect(compileSort({ createdAt: -1, updatedAt: 1 }, columns, new Set(), 'r')).toBe('r.created_at DESC, r.updated_at ASC, r.position ASC');
    expect(error(() => compileSort({ ghost: 'asc' }, columns))).toBe('Unknown column "ghost" in sort');
    expect(error(() => compileSort({ age: 'sideways' }, columns))).toMatch(/Invalid sort direction for "age"/);
  });
});

describe('parseJsonObjectParam', () => {
  it('parses objects and refuses everything else', () => {
    expect(parseJsonObjectParam(undefined, 'filter')).toBeUndefined();
    expect(parseJsonObjectParam('  ', 'filter')).toBeUndefined();
    expect(parseJsonObjectParam('{"a":1}', 'filter')).toEqual({ a: 1 });
    expect(error(() => parseJsonObjectParam('{', 'filter'))).toMatch(/Invalid filter JSON/);
    expect(error(() => parseJsonObjectParam('null', 'sort'))).toBe('sort must be a JSON object');
    expect(error(() => parseJsonObjectParam('[]', 'filter'))).toBe('filter must be a JSON object');
  });
});
