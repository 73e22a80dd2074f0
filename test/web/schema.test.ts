// Reading the published definition schema (web/src/editor/schema.ts): block types with their config
// schemas in the server's order, the palette groups, and starting configs for new blocks.
import { describe, expect, it } from 'vitest';
import { BLOCK_HELP, blockTypesOf, initialConfig, PALETTE_GROUPS } from '../../web/src/editor/schema';

/** The shape GET /api/v1/schemas/workflow-definition.json has: a block enum and one if/then per type. */
const definitionSchema = {
  $defs: {
    block: {
      properties: { type: { enum: ['start', 'function', 'custom'] } },
      allOf: [
        { if: { properties: { type: { const: 'start' } } }, then: { properties: { config: { type: 'object', properties: { inputFormat: { type: 'array' } } } } } },
        { if: { properties: { type: { const: 'function' } } }, then: { properties: { config: { type: 'object', required: ['code'], properties: { code: { type: 'string' } } } } } },
      ],
    },
  },
};

describe('blockTypesOf', () => {
  it('lists the types in the server order with each config schema', () => {
    const types = blockTypesOf(definitionSchema);
    expect(types.map((t) => t.type)).toEqual(['start', 'function', 'custom']);
    expect(types[1].config.required).toEqual(['code']);
  });

  it('gives a type without a rule an open object schema, and an empty schema no types', () => {
    expect(blockTypesOf(definitionSchema)[2].config).toEqual({ type: 'object' });
    expect(blockTypesOf({})).toEqual([]);
  });
});

describe('palette groups', () => {
  it('put each type in one group and describe each', () => {
    const all = PALETTE_GROUPS.flatMap((g) => g.types);
    expect(new Set(all).size).toBe(all.length);
    for (const t of all) expect(BLOCK_HELP[t], t).toBeTruthy();
  });
});

describe('initialConfig', () => {
  it('gives known types a working start', () => {
    expect(initialConfig('start', {})).toEqual({ inputFormat: [{ name: 'message', type: 'string' }] });
    expect(initialConfig('condition', {})).toEqual({ conditions: [{ id: 'yes', expression: 'true' }, { id: 'else' }] });
  });

  it('fills required fields that have defaults for other types', () => {
    const schema = { required: ['mode', 'other'], properties: { mode: { default: 'fast' }, other: { type: 'string' }, optional: { default: 1 } } };
    expect(initialConfig('custom', schema)).toEqual({ mode: 'fast' });
  });
});
