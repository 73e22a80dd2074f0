// Reference suggestions in the editor (web/src/editor/references.ts): which `<...>` references a block's
// config can use, the keys a function returns, and the partial reference under the caret.
import { describe, expect, it } from 'vitest';
import type { Definition } from '../../web/src/api/workflows';
import { partialAt, returnedKeys, secretSuggestions, suggestionsFor } from '../../web/src/editor/references';

const def: Definition = {
  variables: { counter: 0 },
  blocks: [
    { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'who', type: 'string' }, { name: 'n', type: 'number' }] } },
    { id: 'calc', type: 'function', name: 'Do Math', config: { code: 'const x = 1;\nreturn { total: x, "label": "a", nested: { inner: 1 } };' } },
    { id: 'call', type: 'http', name: 'Call', config: { url: 'https://example.com' } },
    { id: 'each', type: 'loop', name: 'Each', config: { kind: 'for', count: 2 }, blocks: [{ id: 'body', type: 'function', name: 'Body', config: { code: 'return {}' } }] },
    { id: 'end', type: 'response', name: 'End', config: {} },
    { id: 'later', type: 'table', name: 'Later', config: { operation: 'insert' } },
  ],
  edges: [{ from: 'start', to: 'calc' }, { from: 'calc', to: 'call' }, { from: 'call', to: 'each' }, { from: 'each', to: 'end' }, { from: 'end', to: 'later' }],
};
const refs = (blockId: string) => suggestionsFor(def, blockId).map((s) => s.ref);

describe('returnedKeys', () => {
  it('reads the top-level keys of returned object literals, quoted or shorthand', () => {
    expect(returnedKeys('return { a: 1, "b": [1, 2], c, d: { e: 1 } }')).toEqual(['a', 'b', 'c', 'd']);
    expect(returnedKeys('if (x) return { one: 1 };\nreturn { two: 2 }')).toEqual(['one', 'two']);
    expect(returnedKeys('return 5')).toEqual([]);
  });
});

describe('suggestionsFor', () => {
  it('offers the start inputs, upstream outputs by normalized name and workflow variables', () => {
    const r = refs('call');
    expect(r).toEqual(expect.arrayContaining(['<start.who>', '<start.n>', '<start.input>', '<domath>', '<domath.total>', '<domath.label>', '<domath.nested>', '<variable.counter>']));
    expect(r).not.toContain('<domath.inner>');
    // not upstream of itself, and not downstream blocks
    expect(r.some((x) => x.startsWith('<call'))).toBe(false);
    expect(r.some((x) => x.startsWith('<end'))).toBe(false);
  });

  it('inside a loop offers the loop fields and what flows into the loop', () => {
    const r = refs('body');
    expect(r).toEqual(expect.arrayContaining(['<loop.index>', '<loop.currentItem>', '<loop.items>', '<domath.total>']));
    expect(r).not.toContain('<parallel.index>');
  });

  it('a container upstream offers its results; a table block its operation\'s fields', () => {
    expect(refs('end')).toContain('<each.results>');
    expect(refs('end')).not.toContain('<each>');
    expect(refs('later')).toEqual(expect.arrayContaining(['<end.data>', '<end.status>']));
    const withTable: Definition = { ...def, blocks: [...def.blocks, { id: 'tail', type: 'wait', name: 'Tail', config: {} }], edges: [...def.edges, { from: 'later', to: 'tail' }] };
    expect(suggestionsFor(withTable, 'tail').map((s) => s.ref)).toEqual(expect.arrayContaining(['<later.rows>', '<later.insertedCount>']));
  });

  it('lists each reference once', () => {
    const r = refs('later');
    expect(new Set(r).size).toBe(r.length);
  });
});

describe('secretSuggestions', () => {
  it('offers {{NAME}} for each secret name', () => {
    expect(secretSuggestions(['API_KEY'])).toEqual([{ ref: '{{API_KEY}}', detail: 'Workspace secret' }]);
  });
});

describe('partialAt', () => {
  it('finds the reference being typed at the caret', () => {
    expect(partialAt('Hello <start.wh', 15)).toEqual({ start: 6, typed: '<start.wh' });
    expect(partialAt('key {{API', 9)).toEqual({ start: 4, typed: '{{API' });
  });

  it('ignores comparisons, finished references and text without one', () => {
    expect(partialAt('a < b', 5)).toBeNull();
    expect(partialAt('<start.who> and', 15)).toBeNull();
    expect(partialAt('plain text', 10)).toBeNull();
    expect(partialAt('{{A}} <x', 8)).toEqual({ start: 6, typed: '<x' });
  });
});
