// The bounded check of connector values against a tenant's JSON Schema (src/connectors/schema-check.ts and
// schema-compile.ts): the ordinary mistakes are found with ajv's wording, the work is bounded by a budget per
// request, and schemas that cannot be compiled within bounds (cyclic $refs, too many sub-schemas) are left to
// the remote API.
import { describe, expect, it } from 'vitest';
import { CheckBudget, CHECK_BUDGET, checkAgainst } from '../../src/connectors/schema-check.js';
import { MAX_SUBSCHEMAS, patternProgramEstimate } from '../../src/connectors/schema-compile.js';

type Schema = Record<string, unknown>;
const check = (schema: Schema, value: unknown, units = CHECK_BUDGET) => checkAgainst(schema, value, new CheckBudget(units));
const error = (schema: Schema, value: unknown) => {
  const r = check(schema, value);
  return r.valid ? null : r.error;
};

const pet: Schema = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1 }, tag: { type: 'string', nullable: true }, age: { type: 'integer', minimum: 0 }, kind: { enum: ['cat', 'dog'] } },
  additionalProperties: false,
};

describe('schema-check', () => {
  it('finds missing required properties and wrong types, with where they are', () => {
    expect(check(pet, { name: 'Rex', age: 3, tag: null, kind: 'dog' })).toEqual({ valid: true, complete: true });
    expect(error(pet, { tag: 'x' })).toEqual({ instancePath: '', message: "must have required property 'name'" });
    expect(error(pet, { name: 'Rex', age: 'old' })).toEqual({ instancePath: '/age', message: 'must be integer' });
    expect(error(pet, { name: 'Rex', age: 1.5 })).toEqual({ instancePath: '/age', message: 'must be integer' });
    expect(error(pet, { name: 'Rex', age: -1 })).toEqual({ instancePath: '/age', message: 'must be >= 0' });
    expect(error(pet, { name: 'Rex', kind: 'cow' })).toEqual({ instancePath: '/kind', message: 'must be one of ["cat","dog"]' });
    expect(error(pet, { name: 'Rex', color: 'red' })).toEqual({ instancePath: '', message: 'must NOT have additional properties' });
    expect(error(pet, 'Rex')).toEqual({ instancePath: '', message: 'must be object' });
    expect(error({ type: 'array', items: { type: 'object', properties: { 'a/b': { type: 'number' } } } }, [{}, { 'a/b': 'x' }]))
      .toEqual({ instancePath: '/1/a~1b', message: 'must be number' });
  });

  it('checks the usual keywords of strings, numbers, arrays and combinations', () => {
    expect(error({ type: 'string', maxLength: 2 }, '😀😀')).toBeNull(); // code points, as ajv counts
    expect(error({ type: 'string', maxLength: 2 }, 'abc')?.message).toBe('must NOT have more than 2 characters');
    expect(error({ type: 'string', pattern: '^[a-z]+$' }, 'A1')?.message).toBe('must match pattern "^[a-z]+$"');
    expect(error({ type: 'number', exclusiveMaximum: true, maximum: 5 }, 5)?.message).toBe('must be < 5'); // OpenAPI 3.0 form
    expect(error({ type: 'number', multipleOf: 3 }, 7)?.message).toBe('must be multiple of 3');
    expect(error({ type: 'array', minItems: 2 }, [1])?.message).toBe('must NOT have fewer than 2 items');
    expect(error({ oneOf: [{ type: 'string' }, { type: 'number' }] }, true)?.message).toBe('must match exactly one schema in oneOf');
    expect(error({ anyOf: [{ type: 'string' }, { type: 'number' }] }, 1)).toBeNull();
    expect(error({ not: { type: 'string' } }, 'x')?.message).toBe('must NOT be valid');
    expect(error({ allOf: [{ required: ['a'] }, { required: ['b'] }] }, { a: 1 })?.message).toBe("must have required property 'b'");
    expect(error({ $defs: { n: { type: 'integer' } }, properties: { x: { $ref: '#/$defs/n' } } }, { x: 'y' })).toEqual({ instancePath: '/x', message: 'must be integer' });
  });

  it('finds duplicate items in linear time, whatever their keys order', () => {
    const unique = { type: 'array', uniqueItems: true };
    expect(error(unique, [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }])?.message).toBe('must NOT have duplicate items (items ## 0 and 1 are identical)');
    expect(error(unique, [1, '1', [1], { 1: 1 }])).toBeNull();
    // 20,000 objects with the duplicate pair at the two ends: a pairwise comparison would make 200 million.
    const items = Array.from({ length: 20_000 }, (_, i) => ({ id: i, name: `item ${i}` }));
    items.push({ id: 0, name: 'item 0' });
    expect(checkAgainst(unique, items, new CheckBudget(1_000_000))).toMatchObject({ valid: false, error: { message: 'must NOT have duplicate items (items ## 0 and 20000 are identical)' } });
  });

  it('stops within its budget, shared by the checks of one request, and sends the rest unchecked', () => {
    const schema = { type: 'array', items: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } } };
    const items: unknown[] = Array.from({ length: 50_000 }, (_, i) => ({ id: i }));
    items.push({ id: 'last' });
    // The mistake is past what one budget covers: sent as is. A larger budget finds it.
    const budget = new CheckBudget();
    expect(checkAgainst(schema, items, budget)).toEqual({ valid: true, complete: false });
    expect(budget.left).toBeLessThanOrEqual(0);
    // The same request's next check has nothing left: unchecked too.
    expect(checkAgainst({ type: 'integer' }, 'not an integer', budget)).toEqual({ valid: true, complete: false });
    expect(checkAgainst(schema, items, new CheckBudget(10_000_000))).toMatchObject({ valid: false, error: { instancePath: '/50000/id' } });
    // A budget spent is counted: the small check costs a handful of units.
    const small = new CheckBudget();
    expect(checkAgainst(pet, { name: 'Rex', age: 3 }, small)).toEqual({ valid: true, complete: true });
    expect(CHECK_BUDGET - small.left).toBeLessThan(20);
  });

  it('charges a pattern by its text and program, and skips patterns that would compile large', () => {
    const redos = { type: 'string', pattern: '^(a+)+$' };
    // RE2: linear; a long text against a small program is charged by its length and still checked.
    expect(error(redos, `${'a'.repeat(40)}!`)?.message).toBe('must match pattern "^(a+)+$"');
    expect(check(redos, `${'a'.repeat(2_000_000)}!`)).toEqual({ valid: true, complete: false });
    // A pattern RE2 cannot express is left to the remote API.
    expect(error({ type: 'string', pattern: '^(?!x).*$' }, 'xyz')).toBeNull();
    // `a{1,1000}` compiles to about 2,000 instructions; fifty of them would take re2js about a second to compile.
    expect(patternProgramEstimate('a{1,1000}')).toBeGreaterThanOrEqual(2_000);
    expect(patternProgramEstimate('^[a-z]+$')).toBeLessThan(20);
    expect(error({ type: 'string', pattern: 'a{1,1000}'.repeat(50) }, 'b')).toBeNull();
  });

  it('leaves schemas with cyclic or outside references, or too many sub-schemas, unchecked', () => {
    const cyclic = { type: 'object', properties: { name: { type: 'string' }, next: { $ref: '#' } } };
    expect(check(cyclic, { name: 1 })).toEqual({ valid: true, complete: false });
    const mutual = { $defs: { a: { properties: { b: { $ref: '#/$defs/b' } } }, b: { items: { $ref: '#/$defs/a' } } }, $ref: '#/$defs/a' };
    expect(check(mutual, { b: [{ b: 'x' }] })).toEqual({ valid: true, complete: false });
    // A reference the parser left in place (circular in the document) points outside the operation's schema.
    expect(check({ type: 'object', properties: { child: { $ref: '#/components/schemas/Node' } } }, 5)).toEqual({ valid: true, complete: false });
    const wide = (n: number) => ({ type: 'object', properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'integer' }])) });
    expect(check(wide(MAX_SUBSCHEMAS + 1), 'not an object')).toEqual({ valid: true, complete: false });
    expect(error(wide(MAX_SUBSCHEMAS - 1), 'not an object')?.message).toBe('must be object');
    // Each use of a reference counts: 2^20 uses of one definition through a chain of pairs.
    const defs: Schema = { d20: { type: 'string' } };
    for (let i = 19; i >= 0; i--) defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    expect(check({ $defs: defs, $ref: '#/$defs/d0' }, 5)).toEqual({ valid: true, complete: false });
  });
});
