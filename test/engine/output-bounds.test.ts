// Outputs a run holds in memory stay bounded: a container fails as soon as the results it has collected pass
// the block output cap (not after all its iterations), and a run fails once the block outputs it holds pass
// maxRunOutputBytes. Caps are small here so that nothing big is allocated.
import { describe, expect, it } from 'vitest';
import { RUN_DEFAULTS, type BlockDefinition, type BlockTrace } from '../../src/engine/index.js';
import { measureJson } from '../../src/engine/json-size.js';
import { errorMessage, MAX_ERROR_CHARS } from '../../src/engine/trace.js';
import { chain, fn, run, start, workflow } from './helpers.js';

function loop(id: string, count: number, blocks: BlockDefinition[]): BlockDefinition {
  return { id, type: 'loop', name: id, config: { kind: 'for', count }, blocks };
}

function parallel(id: string, count: number, blocks: BlockDefinition[]): BlockDefinition {
  return { id, type: 'parallel', name: id, config: { kind: 'count', count }, blocks };
}

/** A function block whose output is a string of `chars` characters (its JSON: chars + 2 bytes). */
function big(id: string, chars: number): BlockDefinition {
  return fn(id, `return "x".repeat(${chars})`);
}

const ran = (trace: BlockTrace[], blockId: string) => trace.filter((t) => t.blockId === blockId && t.status === 'success').length;

describe('a container counts the results it collects', () => {
  it('a loop of big outputs fails at the block output cap after a few iterations, not after all 600', async () => {
    // Each result is 302 bytes of JSON: [r0,r1,r2] is 910 bytes, a fourth makes 1213 > 1000.
    const d = workflow([start(), loop('each', 600, [big('f', 300)])], chain('start', 'each'));
    const r = await run(d, { maxBlockOutputBytes: 1000 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Block "each" output is 1213 bytes, over the limit of 1000 bytes (maxBlockOutputBytes)');
    expect(r.error?.blockId).toBe('each');
    expect(ran(r.trace, 'f')).toBe(4);
    expect(r.steps).toBe(2 + 4);
  });

  it('a loop under the cap still completes with all its results', async () => {
    const d = workflow([start(), loop('each', 3, [big('f', 300)])], chain('start', 'each'));
    const r = await run(d, { maxBlockOutputBytes: 1000 });
    expect(r.status).toBe('completed');
    expect((r.output as { results: string[] }).results).toHaveLength(3);
  });

  it('a parallel of big outputs fails at the cap and starts no further branches', async () => {
    const d = workflow([start(), parallel('par', 600, [big('f', 300)])], chain('start', 'par'));
    const r = await run(d, { maxBlockOutputBytes: 1000, parallelFanOut: 4 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/^Block "par" output is \d+ bytes, over the limit of 1000 bytes \(maxBlockOutputBytes\)$/);
    expect(r.error?.blockId).toBe('par');
    // The fourth result passes the cap; at most the branches already running (fan-out 4) finish after it.
    const branches = ran(r.trace, 'f');
    expect(branches).toBeGreaterThanOrEqual(4);
    expect(branches).toBeLessThanOrEqual(8);
  });

  it('the error edge of the container catches it, like the block output cap', async () => {
    const d = workflow(
      [start(), loop('each', 600, [big('f', 300)]), fn('handler', 'return <each.error>')],
      [...chain('start', 'each'), { from: 'each', to: 'handler', on: 'error' }],
    );
    const r = await run(d, { maxBlockOutputBytes: 1000 });
    expect(r.status).toBe('completed');
    expect(r.output).toBe('Block "each" output is 1213 bytes, over the limit of 1000 bytes (maxBlockOutputBytes)');
    expect(ran(r.trace, 'f')).toBe(4);
  });

  it('an inner loop\'s cap fails only that loop\'s iteration of the outer one', async () => {
    const d = workflow([start(), loop('outer', 50, [loop('inner', 50, [big('f', 300)])])], chain('start', 'outer'));
    const r = await run(d, { maxBlockOutputBytes: 1000 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Block "inner" output is 1213 bytes, over the limit of 1000 bytes (maxBlockOutputBytes)');
    expect(ran(r.trace, 'f')).toBe(4);
  });
});

describe('the block outputs a run holds', () => {
  it('defaults to 16 block output caps (64 MiB)', () => {
    expect(RUN_DEFAULTS.maxRunOutputBytes).toBe(64 * 1024 * 1024);
  });

  it('a run whose held outputs pass maxRunOutputBytes fails at the block that passes it, whatever its error edge', async () => {
    // Five top-level blocks of 902 bytes each: the fourth brings the held total (start's {} included) past 3000.
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const d = workflow(
      [start(), ...ids.map((id) => big(id, 900)), fn('handler', 'return "handled"')],
      [...chain('start', ...ids), { from: 'd', to: 'handler', on: 'error' }],
    );
    const r = await run(d, { maxBlockOutputBytes: 1000, maxRunOutputBytes: 3000 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Run output limit exceeded: the run would hold 3610 bytes of block outputs (limit 3000 bytes, maxRunOutputBytes); stopped at block "d"');
    expect(r.error?.blockId).toBe('d');
    expect(r.trace.map((t) => [t.blockId, t.status])).toEqual([['start', 'success'], ['a', 'success'], ['b', 'success'], ['c', 'success'], ['d', 'error']]);
  });

  it('a loop whose iterations each stay small stops once the trace holds too much', async () => {
    // Each iteration: a 902-byte block, then a small one (the loop's result), so the loop itself stays small.
    const d = workflow(
      [start(), loop('each', 600, [big('page', 900), fn('pick', 'return <page>.length')])],
      [...chain('start', 'each'), { from: 'page', to: 'pick' }],
    );
    const r = await run(d, { maxBlockOutputBytes: 100_000, maxRunOutputBytes: 20_000 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/^Run output limit exceeded: the run would hold \d+ bytes of block outputs \(limit 20000 bytes, maxRunOutputBytes\); stopped at block "page"$/);
    expect(ran(r.trace, 'page')).toBeLessThan(25);
  });

  it('without maxRunOutputBytes the bound is 16 times the block output cap', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `b${i}`);
    const d = workflow([start(), ...ids.map((id) => big(id, 900))], chain('start', ...ids));
    const r = await run(d, { maxBlockOutputBytes: 1000 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toContain('(limit 16000 bytes, maxRunOutputBytes); stopped at block "b17"');
  });

  it('does not count outputs the trace drops (they are not held)', async () => {
    const d = workflow(
      [start(), loop('each', 100, [big('page', 900), fn('pick', 'return 1')])],
      [...chain('start', 'each'), { from: 'page', to: 'pick' }],
    );
    // 100 x 902 bytes are produced, but a trace of 20 entries keeps at most 20 of them.
    const r = await run(d, { maxBlockOutputBytes: 100_000, maxRunOutputBytes: 20_000, maxTraceEntries: 20 });
    expect(r.status).toBe('completed');
    expect(r.traceTruncated).toBeGreaterThan(0);
  });
});

describe('measureJson', () => {
  const exact = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');

  it('gives the UTF-8 length of JSON.stringify', () => {
    const values: unknown[] = [
      null, true, false, 0, -0, 1.5e300, NaN, -Infinity, '', 'plain', 'quote " back \\ slash', '\n\t\b\f\r\u0001\u001f\u007f',
      'é€😀', '\ud800 lone \udc00', [1, undefined, () => 1, Symbol('s'), null], { a: undefined, b: () => 1, c: 1, 'k\u00e9y': ['x'] },
      { when: new Date(0), nested: { deep: [[[]], {}] } }, Object.assign(Object.create(null) as object, { x: 1 }),
      [new Number(3), new String('s'), new Boolean(false)], { toJSON: (key: string) => `k:${key}` }, new Array(5),
      // Long strings are measured natively (byte length, then the characters JSON escapes).
      `${'é€😀 "q" \\ \n\u0001'.repeat(40)}`, `${'x'.repeat(300)}\ud800`, `\udc00${'y'.repeat(300)}\ud83d\ude00`,
    ];
    for (const v of values) expect(measureJson(v, Infinity), JSON.stringify(v)).toMatchObject({ bytes: exact(v), json: true });
    expect(measureJson(undefined, Infinity).bytes).toBe(0);
  });

  it('says why the databases could not store a value: a NUL, an unpaired surrogate, nesting past 1,000 levels', () => {
    const deep = (levels: number) => {
      let v: unknown = 1;
      for (let i = 0; i < levels; i++) v = [v];
      return v;
    };
    for (const [v, why] of [
      ['a\u0000b', 'nul'], [`${'x'.repeat(300)}\u0000`, 'nul'], [{ ['k\u0000']: 1 }, 'nul'],
      ['\ud800', 'surrogate'], [`${'x'.repeat(300)}\udc00`, 'surrogate'], [deep(1001), 'depth'],
    ] as [unknown, string][]) expect(measureJson(v, Infinity).unstorable, JSON.stringify(v).slice(0, 40)).toBe(why);
    for (const v of ['😀', `${'x'.repeat(300)}😀`, deep(1000), { a: ['\t\n'] }]) expect(measureJson(v, Infinity).unstorable).toBeUndefined();
  });

  it('stops past its bound without walking the rest', () => {
    const started = performance.now();
    const huge = measureJson(new Array(2 ** 30), 1000);
    expect(huge.bytes).toBeGreaterThan(1000);
    expect(measureJson(['x'.repeat(10_000)], 1000).bytes).toBeGreaterThan(1000);
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('says when the value is not JSON (a cycle, a BigInt)', () => {
    const cyclic: Record<string, unknown> = { a: 'xx' };
    cyclic.self = cyclic;
    expect(measureJson(cyclic, Infinity).json).toBe(false);
    expect(measureJson({ n: 10n }, Infinity)).toEqual({ bytes: 8, json: false });
  });
});

describe('error messages', () => {
  it('are cut past MAX_ERROR_CHARS, saying how much was left out, never between the halves of a surrogate pair', () => {
    expect(errorMessage(new Error('short'))).toBe('short');
    expect(errorMessage(new Error('a'.repeat(MAX_ERROR_CHARS)))).toBe('a'.repeat(MAX_ERROR_CHARS));
    expect(errorMessage('b'.repeat(MAX_ERROR_CHARS + 5))).toBe(`${'b'.repeat(MAX_ERROR_CHARS)}… (5 more characters)`);
    // An emoji (two UTF-16 units) across the cut: it goes whole to the part left out.
    const cut = errorMessage(new Error(`${'c'.repeat(MAX_ERROR_CHARS - 1)}😀tail`));
    expect(cut).toBe(`${'c'.repeat(MAX_ERROR_CHARS - 1)}… (6 more characters)`);
    expect(/[\ud800-\udbff](?![\udc00-\udfff])/.test(cut)).toBe(false);
  });
});
