// What one run holds is bounded also past its trace's entries, and its variables are bounded (found by an
// audit: a sync run past 2,000 trace entries kept every later block output in its step records without counting
// them, so two requests ended the server's heap; a variables block doubled a variable through an error edge to
// 268 million characters, its output failing the cap only after the assignment).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  // A block output cap of 1 KiB: a run holds at most 16 KiB of outputs; 10 trace entries.
  t = await startTestServer({ env: { WEFT_MAX_BLOCK_OUTPUT_BYTES: '1024', WEFT_MAX_TRACE_ENTRIES: '10' } });
});
afterAll(async () => {
  await t?.close();
});

/**
 * A loop of 100 iterations, each a block returning 500 characters and then a block returning 1: 50 KB of
 * outputs held in step records, most past the trace's 10 entries, while the loop's own results stay small.
 */
const manyOutputs = {
  blocks: [
    start(),
    { id: 'each', type: 'loop', name: 'Each', config: { kind: 'for', count: 100 }, blocks: [fn('big', 'return "x".repeat(500) + <loop.index>', 'Big'), fn('tiny', 'return 1', 'Tiny')] },
    fn('last', 'return 1', 'Last'),
  ],
  edges: [{ from: 'start', to: 'each' }, { from: 'big', to: 'tiny' }, { from: 'each', to: 'last' }],
};

describe('a run holding block outputs', () => {
  it('counts every output its step records keep, past the trace entries too (sync and async)', async () => {
    const id = await deploy(t, 'held-outputs', manyOutputs);
    const sync = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: {} });
    expect(sync.status, sync.text).toBe(500);
    expect(sync.body.error).toMatch(/Run output limit exceeded: the run would hold \d+ bytes of block outputs \(limit 16384 bytes/);
    const accepted = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: {}, async: true });
    const job = await waitForJob(t, accepted.body.taskId);
    expect(job.status).toBe('failed');
  });
});

describe('run variables', () => {
  it('are bounded together by the block output cap: the block fails and the variables stay as they were', async () => {
    const id = await deploy(t, 'variables-bound', {
      variables: { a: 'init' },
      blocks: [
        start([{ name: 's', type: 'string' }]),
        { id: 'v', type: 'variables', name: 'V', config: { assignments: { a: '<start.s>', b: '<start.s>', c: '<start.s>' } } },
        fn('after', 'return { a: <variable.a> }', 'After'),
        fn('handler', 'return { a: <variable.a> }', 'Handler'),
      ],
      edges: [{ from: 'start', to: 'v' }, { from: 'v', to: 'after' }, { from: 'v', to: 'handler', on: 'error' }],
    });
    const big = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: { s: 'y'.repeat(400) } });
    expect(big.status, big.text).toBe(200);
    expect(big.body.output).toEqual({ a: 'init' });
    const log = await t.call('GET', `/api/v1/logs/${big.body.executionId}`);
    const v = log.body.data.trace.find((e: { blockId: string }) => e.blockId === 'v');
    expect(v.error).toMatch(/would make the run's variables \d+ bytes, over the limit of 1024 bytes/);
    // Within the cap the assignment takes effect.
    const small = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: { s: 'z' } });
    expect(small.body.output).toEqual({ a: 'z' });
  });
});
