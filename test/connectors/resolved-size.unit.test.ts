// resolvedSizeWithin: the bound a document's resolved size is checked against before the OpenAPI parser runs
// (src/connectors/openapi.ts). Shared schemas count at every use; circular references stay references.
import { describe, expect, it } from 'vitest';
import { resolvedSizeWithin } from '../../src/connectors/openapi.js';

const text = 'x'.repeat(1000);

describe('resolvedSizeWithin', () => {
  it('counts a referenced schema at every place it is used', () => {
    const doc = { a: { $ref: '#/defs/big' }, b: { $ref: '#/defs/big' }, defs: { big: { description: text } } };
    // Three copies of the 1,000 characters: the two uses and the definition itself.
    expect(resolvedSizeWithin(doc, 2_900)).toBe(false);
    expect(resolvedSizeWithin(doc, 3_200)).toBe(true);
  });

  it('leaves a circular reference as a reference, so the walk ends', () => {
    const doc = { node: { type: 'object', properties: { next: { $ref: '#/node' }, child: { items: { $ref: '#/node' } } } } };
    expect(resolvedSizeWithin(doc, 1_000)).toBe(true);
  });

  it('stops as soon as the count passes the limit, whatever the document stands for', () => {
    // 40 levels of two references each: 2^40 copies of the leaf if walked through.
    const defs: Record<string, unknown> = { d40: { type: 'string' } };
    for (let i = 39; i >= 0; i--) defs[`d${i}`] = { l: { $ref: `#/defs/d${i + 1}` }, r: { $ref: `#/defs/d${i + 1}` } };
    expect(resolvedSizeWithin({ root: { $ref: '#/defs/d0' }, defs }, 100_000)).toBe(false);
  });

  it('counts a dangling or escaped reference without following it', () => {
    expect(resolvedSizeWithin({ a: { $ref: '#/nowhere' } }, 100)).toBe(true);
    expect(resolvedSizeWithin({ 'a/b': { c: text }, r: { $ref: '#/a~1b' } }, 1_500)).toBe(false);
  });
});
