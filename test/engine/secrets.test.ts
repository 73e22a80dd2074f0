import { describe, expect, it } from 'vitest';
import { SecretMask } from '../../src/engine/index.js';
import { chain, fn, ports, run, start, workflow } from './helpers.js';

const VALUE = 'sk-live-9f8e7d6c5b4a';

describe('secret masking', () => {
  const mask = new SecretMask([VALUE, 'a"b\nc']);

  it('masks whole values, their JSON and URL spellings, and pieces of 8 characters or more', () => {
    expect(mask.text(`Bearer ${VALUE}!`)).toBe('Bearer ***!');
    expect(mask.text(`x ${VALUE.slice(3, 11)} y`)).toBe('x *** y');
    expect(mask.text(`x ${VALUE.slice(3, 10)} y`)).toBe(`x ${VALUE.slice(3, 10)} y`); // 7 characters: ordinary text
    expect(mask.text(JSON.stringify({ v: 'a"b\nc' }))).toBe('{"v":"***"}');
    expect(mask.text(`?k=${encodeURIComponent('a"b\nc')}`)).toBe('?k=***');
  });

  it('masks inside values: keys, nested strings and numbers, leaving the rest as it is', () => {
    const numeric = new SecretMask(['12345678901']);
    expect(numeric.value({ n: 12345678901, list: ['12345678901x', 3], ['k12345678901']: true })).toEqual({ n: '***', list: ['***x', 3], ['k***']: true });
    expect(mask.value({ a: 1, b: [true, null, 'plain'] })).toEqual({ a: 1, b: [true, null, 'plain'] });
  });
});

describe('secrets through the port', () => {
  const port = (values: Record<string, string>, asked: string[][] = []) => ({
    resolve: async (names: readonly string[]) => {
      asked.push([...names]);
      const missing = names.filter((n) => !(n in values));
      if (missing.length) throw new Error(`Secret {{${missing[0]}}} is not set in this workspace`);
      return Object.fromEntries(names.map((n) => [n, values[n]]));
    },
  });

  it('resolves a block\'s secrets when it runs, once per run, and masks what user code returns, throws and logs', async () => {
    const asked: string[][] = [];
    const d = workflow([
      start(),
      fn('a', 'console.log("key", {{API_TOKEN}}); return { whole: {{API_TOKEN}}, part: {{API_TOKEN}}.slice(2, 14), len: {{API_TOKEN}}.length }'),
      fn('b', 'throw new Error("bad token " + {{API_TOKEN}})'),
    ], chain('start', 'a', 'b'));
    const r = await run(d, { ports: ports({ secrets: port({ API_TOKEN: VALUE }, asked) }) });
    expect(asked).toEqual([['API_TOKEN']]);
    expect(r.status).toBe('failed');
    expect(r.trace[1].output).toEqual({ whole: '***', part: '***', len: VALUE.length });
    expect(r.error?.message).toBe('Block "b" failed: bad token ***');
    expect(JSON.stringify(r)).not.toContain(VALUE.slice(0, 8));
  });

  it('masks step records before they are recorded', async () => {
    const steps: unknown[] = [];
    const d = workflow([start(), fn('a', 'return "v=" + {{API_TOKEN}}')], chain('start', 'a'));
    await run(d, { ports: ports({ secrets: port({ API_TOKEN: VALUE }) }), onStep: async (s) => { steps.push(s); } });
    expect(steps.at(-1)).toMatchObject({ blockId: 'a', output: 'v=***' });
  });

  it('a secret that is not set fails the block that references it, naming the secret', async () => {
    const d = workflow([start(), fn('a', 'return 1'), fn('b', 'return {{GONE}}')], chain('start', 'a', 'b'));
    const r = await run(d, { ports: ports({ secrets: port({}) }) });
    expect(r.status).toBe('failed');
    expect(r.trace.find((t) => t.blockId === 'a')?.status).toBe('success');
    expect(r.error).toMatchObject({ blockId: 'b', message: 'Block "b" failed: Secret {{GONE}} is not set in this workspace' });
  });
});
