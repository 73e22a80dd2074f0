import { describe, expect, it, vi } from 'vitest';
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
    // A URL's host is lower-cased by the parser: the value in either case is masked too.
    expect(mask.text(`http://${VALUE.toUpperCase()}/`)).toBe('http://***/');
    expect(new SecretMask(['Zq9xW3rT7vY2pL8k']).text('request to zq9xw3rt7vy2pl8k.invalid failed')).toBe('request to ***.invalid failed');
  });

  it('masks a value as each part of a URL and a form field spell it (found by an audit: words under 8 characters)', () => {
    const phrase = new SecretMask(['correct horse battery staple']);
    // URLSearchParams (the http block's and connectors' query parameters): spaces become '+'.
    expect(phrase.text('GET /echo?key=correct+horse+battery+staple')).toBe('GET /echo?key=***');
    expect(phrase.text(`https://x/p?key=${new URLSearchParams({ k: "it's (~x) correct horse battery staple" }).toString()}`)).not.toContain('correct+horse');
    const odd = 'p@ss word"<é>`{|}';
    const url = new URL('http://h/');
    url.username = odd;
    url.pathname = `/${odd}`;
    url.search = `?${odd}`;
    url.hash = `#${odd}`;
    const masked = new SecretMask([odd]).text(url.href);
    for (const part of [url.username, url.pathname.slice(1), url.search.slice(1), url.hash.slice(1)]) expect(masked).not.toContain(part);
  });

  it('masks inside values: keys, nested strings and numbers, leaving the rest as it is', () => {
    const numeric = new SecretMask(['12345678901']);
    expect(numeric.value({ n: 12345678901, list: ['12345678901x', 3], ['k12345678901']: true })).toEqual({ n: '***', list: ['***x', 3], ['k***']: true });
    expect(mask.value({ a: 1, b: [true, null, 'plain'] })).toEqual({ a: 1, b: [true, null, 'plain'] });
  });

  it('masks overlapping, touching and repeated occurrences, short values and non-ASCII text as one stretch each', () => {
    expect(mask.text(`${VALUE}${VALUE}-${VALUE.slice(0, 12)}${VALUE.slice(6)}`)).toBe('***-***');
    expect(mask.text(`${VALUE.slice(0, 10)} ${VALUE.slice(13)}`)).toBe(`*** ${VALUE.slice(13)}`);
    const short = new SecretMask(['pw1', 'é€ secret ü']);
    expect(short.text('pw1pw1 xpw1x pw')).toBe('*** x***x pw');
    expect(short.text(`[${'€ secret'}]`)).toBe('[***]');
    expect(short.text(`q=${encodeURIComponent('é€ secret ü')}`)).toBe('q=***');
    expect(short.text('1234567')).toBe('1234567');
  });

  it('masks each distinct long string of a value once, however many times it appears', () => {
    const long = (tail: string) => `${'ab'.repeat(5_000)} ${VALUE} ${tail}`;
    const text = vi.spyOn(SecretMask.prototype, 'text');
    try {
      // Equal copies that are different strings, as outputs passed from block to block are.
      const trace = Array.from({ length: 40 }, (_, i) => ({ blockId: `f${i}`, output: { x: long('end'), y: long(`other ${i % 2}`) } }));
      const masked = mask.value({ trace, output: long('end') });
      const scannedLong = text.mock.calls.filter(([s]) => s.length > 10_000).length;
      expect(scannedLong).toBe(3);
      expect(masked.output).toBe(`${'ab'.repeat(5_000)} *** end`);
      expect(masked.trace.every((t) => t.output.x === masked.output && t.output.y.endsWith(' *** other 0') !== t.output.y.endsWith(' *** other 1'))).toBe(true);
    } finally {
      text.mockRestore();
    }
  });

  it('valueYielding gives what value gives, letting the event loop run while a large value is masked', async () => {
    const values = [VALUE, 'pw1'];
    const m = new SecretMask(values);
    // Secrets and pieces of them across the places a long string is scanned in parts.
    const chars = 'xy'.repeat(800_000).split('');
    for (const [at, piece] of [[599_990, VALUE], [1_199_996, VALUE.slice(2, 12)], [1_499_999, 'pw1'], [5, VALUE.slice(0, 7)]] as const) {
      for (let i = 0; i < piece.length; i++) chars[at + i] = piece[i];
    }
    const big = chars.join('');
    const v = { trace: [{ output: big }, { output: `${big}!` }, { n: 12, s: `${VALUE} and pw1`, when: new Date(0) }], output: [big, 'plain'] };
    let now = 0;
    let yields = 0;
    const clock = { now: () => (now += 4), yield: async () => { yields++; } };
    const masked = await m.valueYielding(v, clock);
    // Compared as booleans: a failed comparison would print megabytes.
    expect(JSON.stringify(masked) === JSON.stringify(m.value(v))).toBe(true);
    expect(masked.trace[2]).toEqual({ n: 12, s: '*** and ***', when: new Date(0) });
    expect(yields).toBeGreaterThan(0);
    const json = JSON.stringify(masked);
    expect(json).not.toContain(VALUE.slice(0, 8));
    expect(json).not.toContain(VALUE.slice(4, 12));
    expect(json).not.toContain('pw1');
    expect(json.match(/\*\*\*/g)).toHaveLength(3 * 3 + 2);
    expect(masked.output[0].slice(0, 12)).toBe(`xyxyx${VALUE.slice(0, 7)}`);
    // A clock that cannot yield masks in one go.
    expect(JSON.stringify(await m.valueYielding(v, { now: () => 0 })) === json).toBe(true);
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

  it('a run passing a large string through many blocks masks every copy in the output and the trace', async () => {
    const blocks = 25;
    const steps: unknown[] = [];
    // The secret sits across the places where a long string is scanned in parts.
    const first = fn('f0', 'const k = {{BIG}}; return { x: "ab".repeat(299995) + k + "ab".repeat(300000) + k.slice(3, 15) + "xy".repeat(100000) }');
    const rest = Array.from({ length: blocks - 1 }, (_, i) => fn(`f${i + 1}`, `return { x: <f${i}.x>, n: ${i} }`));
    const d = workflow([start(), first, ...rest], chain('start', ...Array.from({ length: blocks }, (_, i) => `f${i}`)));
    // The trace keeps every copy here (its default budget of outputs would keep two): each must be masked.
    const r = await run(d, { ports: ports({ secrets: port({ BIG: VALUE }) }), onStep: async (s) => { steps.push(s); }, maxTraceOutputBytes: 64 * 1024 * 1024 });
    expect(r.status).toBe('completed');
    const expected = `${'ab'.repeat(299995)}***${'ab'.repeat(300000)}***${'xy'.repeat(100000)}`;
    expect(r.trace.filter((t) => t.blockId.startsWith('f'))).toHaveLength(blocks);
    // Compared as booleans: a failed string comparison would print megabytes.
    for (const t of r.trace.filter((e) => e.blockId.startsWith('f'))) expect((t.output as { x: string }).x === expected).toBe(true);
    expect((r.output as { x: string }).x === expected).toBe(true);
    for (const text of [JSON.stringify(r), JSON.stringify(steps)]) {
      expect(text).not.toContain(VALUE.slice(0, 8));
      expect(text).not.toContain(VALUE.slice(3, 11));
      expect(text).not.toContain(VALUE.slice(-8));
    }
  });

  it('a secret that is not set fails the block that references it, naming the secret', async () => {
    const d = workflow([start(), fn('a', 'return 1'), fn('b', 'return {{GONE}}')], chain('start', 'a', 'b'));
    const r = await run(d, { ports: ports({ secrets: port({}) }) });
    expect(r.status).toBe('failed');
    expect(r.trace.find((t) => t.blockId === 'a')?.status).toBe('success');
    expect(r.error).toMatchObject({ blockId: 'b', message: 'Block "b" failed: Secret {{GONE}} is not set in this workspace' });
  });
});
