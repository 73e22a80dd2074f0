// What a run's trace keeps is bounded per run (docs/architecture.md, Run traces): console lines and block
// outputs. Found by a session's audit: a loop of function blocks each logging 1,000 lines of 5,500 characters
// grew the server by 3 GB in one request and stored 438 MB with the run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy } from '../support/workflows.js';

interface TraceEntry { name: string; output?: unknown; outputOmittedBytes?: number; logs?: { level: string; message: string }[]; logsDropped?: number }

/** A loop of `count` iterations whose function block logs `lines` lines of `chars` characters each. */
const chattyLoop = (count: number, lines: number, chars: number) => ({
  blocks: [
    { id: 'start', type: 'start', name: 'Start', config: {} },
    {
      id: 'each', type: 'loop', name: 'Each', config: { kind: 'for', count },
      blocks: [{
        id: 'talk', type: 'function', name: 'Talk',
        config: { code: `const line = String(<loop.index>).padEnd(${chars}, '.'); for (let i = 0; i < ${lines}; i++) console.log(line); return { i: <loop.index> }` },
      }],
    },
  ],
  edges: [{ from: 'start', to: 'each' }],
});

/** Three function blocks in a row, each returning a text of `chars` characters. */
const threeOutputs = (chars: number) => ({
  blocks: [
    { id: 'start', type: 'start', name: 'Start', config: {} },
    ...['a', 'b', 'c'].map((id) => ({ id, type: 'function', name: id.toUpperCase(), config: { code: `return { text: '${id}'.repeat(${chars}) }` } })),
  ],
  edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'b' }, { from: 'b', to: 'c' }],
});

const logChars = (trace: TraceEntry[]) => trace.reduce((n, e) => n + (e.logs ?? []).reduce((m, l) => m + l.message.length, 0), 0);

describe('a run trace', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ env: { WEFT_MAX_TRACE_OUTPUT_BYTES: '100000' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('keeps at most the run budget of console lines (1 MiB by default), counting the rest per block', async () => {
    // 20 iterations x 1,000 lines x 3,000 characters: 60 MB of console output.
    const id = await deploy(t, 'chatty-loop', chattyLoop(20, 1000, 3000));
    const r = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: {} });
    expect(r.status, r.text).toBe(200);
    expect(r.body.success).toBe(true);
    const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
    expect(log.status).toBe(200);
    const trace = (log.body.data.trace as TraceEntry[]).filter((e) => e.name === 'Talk');
    expect(trace).toHaveLength(20);
    const kept = logChars(trace);
    expect(kept).toBeLessThanOrEqual(1024 * 1024);
    expect(kept).toBeGreaterThan(900_000);
    // One call hands back at most 1 MiB of lines, then a line saying the rest was not kept.
    expect(trace[0].logs!.at(-1)!.message).toMatch(/console output past 1,048,576 characters in this call was not kept/);
    // The first call filled the budget: every later block kept no line of its own (at most the short one saying
    // its call's output was cut) and counts what it dropped.
    for (const e of trace.slice(1)) {
      for (const line of e.logs ?? []) expect(line.message).toMatch(/was not kept/);
      expect(e.logsDropped).toBeGreaterThan(300);
    }
    expect(log.body.data.output).toEqual({ results: Array.from({ length: 20 }, (_, i) => ({ i })) });
  });

  it('keeps block outputs within the run budget and names the size of those it does not; the answer is whole', async () => {
    const id = await deploy(t, 'three-outputs', threeOutputs(60_000));
    const r = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: {} });
    expect(r.status, r.text).toBe(200);
    expect(r.body.output).toEqual({ text: 'c'.repeat(60_000) });
    const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
    const byName = new Map((log.body.data.trace as TraceEntry[]).map((e) => [e.name, e]));
    // 100,000 bytes of outputs: A's 60,012 fit, B's and C's do not.
    expect(byName.get('A')!.output).toEqual({ text: 'a'.repeat(60_000) });
    expect(byName.get('A')!.outputOmittedBytes).toBeUndefined();
    for (const name of ['B', 'C']) {
      expect(byName.get(name)!.output).toBeUndefined();
      expect(byName.get(name)!.outputOmittedBytes).toBe(JSON.stringify({ text: 'x'.repeat(60_000) }).length);
    }
    // The run's own output is stored whole.
    expect(log.body.data.output).toEqual({ text: 'c'.repeat(60_000) });
  });
});
