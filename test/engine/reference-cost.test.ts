// What resolving a block's references costs is bounded (audit finding, critical): 2,000 references into one
// 3.5 MB JSON string parsed it once per reference, 46 s of the event loop inside one step; now each string is
// parsed once per block, and the JSON text parsed and the values brought in are bounded per block
// (docs/architecture.md, "Where limits are enforced"). Driven over the HTTP API on an in-process server; the
// parses are counted by a pass-through spy on JSON.parse (the run executes on this process's main thread).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

const CAP = 64 * 1024;

let t: TestServer;
beforeAll(async () => {
  // A block output cap of 64 KiB: a block's references may parse 64 KiB of JSON text and bring in 128 KiB.
  t = await startTestServer({ env: { WEFT_MAX_BLOCK_OUTPUT_BYTES: String(CAP) } });
});
afterAll(async () => {
  await t?.close();
});

/** Calls `work`, counting the JSON.parse calls whose text is one of `texts`. */
async function parsesOf<T>(texts: string[], work: () => Promise<T>): Promise<{ result: T; parses: number }> {
  const watched = new Set(texts);
  const spy = vi.spyOn(JSON, 'parse');
  try {
    const result = await work();
    const parses = spy.mock.calls.filter(([text]) => typeof text === 'string' && watched.has(text)).length;
    return { result, parses };
  } finally {
    spy.mockRestore();
  }
}

async function execute(id: string, inputs: Record<string, unknown>) {
  return t.call('POST', `/api/workflows/${id}/execute`, { inputs });
}

/** 500 items as JSON text, about 20 KB: within the cap as a start field (the start output holds it twice). */
const items = Array.from({ length: 500 }, (_, i) => ({ id: i, tag: `t${i}`, pad: 'abcdefghij' }));
const itemsText = JSON.stringify({ name: 'catalog', items });

describe('references into JSON text', () => {
  it('990 references into one JSON string resolve to the right values and parse it once', async () => {
    const assignments: Record<string, string> = {};
    for (let i = 0; i < 990; i++) assignments[`k${i}`] = `<start.s.items[${i % 500}].id>`;
    assignments.count = '<start.s.items.length>';
    assignments.text = 'first <start.s.items[0].tag>, last <start.s.items.499.tag> of <start.s.name>';
    assignments.missing = '<start.s.items[500].id>';
    const id = await deploy(t, 'refs-into-json', {
      blocks: [start([{ name: 's', type: 'string' }]), { id: 'v', type: 'variables', name: 'V', config: { assignments } }],
      edges: [{ from: 'start', to: 'v' }],
    });
    const { result: r, parses } = await parsesOf([itemsText], () => execute(id, { s: itemsText }));
    expect(r.status, r.text).toBe(200);
    for (let i = 0; i < 990; i++) expect(r.body.output[`k${i}`]).toBe(i % 500);
    expect(r.body.output).toMatchObject({ count: 500, text: 'first t0, last t499 of catalog', missing: null });
    // Once per resolution of the block's config (the code before parsed it 1,003 times).
    expect(parses).toBe(1);
  });

  it('a loop item holding JSON text is parsed once per iteration, however many references read it', async () => {
    const list = [0, 1, 2].map((i) => JSON.stringify({ a: i, b: `b${i}`, c: [i, i * 2] }));
    const id = await deploy(t, 'refs-into-loop-items', {
      blocks: [
        start([{ name: 'list', type: 'array' }]),
        {
          id: 'each', type: 'loop', name: 'Each', config: { kind: 'forEach', items: '<start.list>' },
          blocks: [{ id: 'v', type: 'variables', name: 'V', config: { assignments: { a: '<loop.currentItem.a>', b: '<loop.item.b>', c: '<loop.currentItem.c[1]>', i: '<loop.index>' } } }],
        },
      ],
      edges: [{ from: 'start', to: 'each' }],
    });
    const { result: r, parses } = await parsesOf(list, () => execute(id, { list }));
    expect(r.status, r.text).toBe(200);
    expect(r.body.output.results).toEqual([0, 1, 2].map((i) => ({ a: i, b: `b${i}`, c: i * 2, i })));
    expect(parses).toBe(3);
  });

  it('text that looks like JSON but is not is looked at once, and reads as plain text', async () => {
    const broken = `[${'1,'.repeat(10_000)}`;
    const assignments: Record<string, string> = { length: '<start.s.length>' };
    for (let i = 0; i < 200; i++) assignments[`k${i}`] = `<start.s.x${i}>`;
    const id = await deploy(t, 'refs-into-broken-json', {
      blocks: [start([{ name: 's', type: 'string' }]), { id: 'v', type: 'variables', name: 'V', config: { assignments } }],
      edges: [{ from: 'start', to: 'v' }],
    });
    const { result: r, parses } = await parsesOf([broken], () => execute(id, { s: broken }));
    expect(r.status, r.text).toBe(200);
    expect(r.body.output.length).toBe(broken.length);
    expect(r.body.output.k0).toBeNull();
    expect(r.body.output.k199).toBeNull();
    expect(parses).toBe(1);
  });

  it('a block whose references parse more JSON text than the block output cap fails, naming the limit', async () => {
    // Two outputs of about 40 KB of JSON text each: either alone is within the cap, both together are not.
    const make = (name: string) => fn(name, `return JSON.stringify({ name: '${name}', pad: 'x'.repeat(40000) })`);
    const id = await deploy(t, 'refs-parse-budget', {
      blocks: [
        start(), make('one'), make('two'),
        { id: 'each', type: 'variables', name: 'Each', config: { assignments: { one: '<one.name>', alsoOne: '<one.pad.length>' } } },
        { id: 'both', type: 'variables', name: 'Both', config: { assignments: { one: '<one.name>', two: '<two.name>' } } },
        fn('handler', 'return { caught: <both.error> }'),
      ],
      edges: [
        { from: 'start', to: 'one' }, { from: 'one', to: 'two' }, { from: 'two', to: 'each' },
        { from: 'each', to: 'both' }, { from: 'both', to: 'handler', on: 'error' },
      ],
    });
    const r = await execute(id, {});
    expect(r.status, r.text).toBe(200);
    const caught: string = r.body.output.caught;
    expect(caught).toBe(
      "references parse more than 65536 characters of JSON text (the limit for one block, maxBlockOutputBytes); parse the text once in a function block and reference that block's output",
    );
    const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
    const each = log.body.data.trace.find((e: { blockId: string }) => e.blockId === 'each');
    expect(each.output).toEqual({ one: 'one', alsoOne: 40000 });
  });

  it('a string longer than the block output cap is read as plain text by a path (only a definition can hold one)', async () => {
    const big = JSON.stringify({ name: 'big', pad: 'y'.repeat(CAP) });
    const id = await deploy(t, 'refs-into-long-text', {
      variables: { big },
      blocks: [start(), fn('f', 'return [<variable.big.name>, <variable.big.length>]')],
      edges: [{ from: 'start', to: 'f' }],
    });
    const r = await execute(id, {});
    expect(r.status, r.text).toBe(200);
    expect(r.body.output).toEqual([null, big.length]);
  });
});

describe('values references bring into one block', () => {
  // About 20 KB of JSON: a block may bring in 128 KiB, so six times.
  const value = Array.from({ length: 1000 }, (_, i) => `v${String(i).padStart(15, '0')}`);

  it('a config taking one value whole many times fails its block instead of building it', async () => {
    const assignments: Record<string, string> = {};
    for (let i = 0; i < 1000; i++) assignments[`k${i}`] = i % 2 === 0 ? '<start.o>' : 'x<start.o>';
    const id = await deploy(t, 'refs-bring-in-config', {
      blocks: [start([{ name: 'o', type: 'array' }]), { id: 'v', type: 'variables', name: 'V', config: { assignments } }],
      edges: [{ from: 'start', to: 'v' }],
    });
    const r = await execute(id, { o: value });
    expect(r.status, r.text).toBe(500);
    expect(r.body.error).toBe('Block "V" failed: references resolve to more than 131072 bytes of JSON (the limit for one block, 2 times maxBlockOutputBytes)');
  });

  it("a function's code binding one value under many names fails its block instead of sending it each time", async () => {
    // Heads match whatever their case, so each spelling is a binding of its own.
    const spellings = ['start', 'Start', 'START', 'sTart', 'stArt', 'staRt', 'starT', 'STart'];
    const id = await deploy(t, 'refs-bring-in-code', {
      blocks: [start([{ name: 'o', type: 'array' }]), fn('f', `return [${spellings.map((s) => `<${s}.o>`).join(', ')}].length`)],
      edges: [{ from: 'start', to: 'f' }],
    });
    const r = await execute(id, { o: value });
    expect(r.status, r.text).toBe(500);
    expect(r.body.error).toMatch(/^Block "f" failed: references resolve to more than 131072 bytes of JSON/);
    // Within the bound the same code runs: a short value bound eight times.
    const small = await execute(id, { o: ['a'] });
    expect(small.status, small.text).toBe(200);
    expect(small.body.output).toBe(8);
  });
});
