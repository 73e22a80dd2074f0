// No run can hurt another: step budget, event-loop yielding, output cap, trace cap.
import { describe, expect, it } from 'vitest';
import { compile, RUN_DEFAULTS, runWorkflow, type BlockDefinition, type ClockPort, type StepRecord } from '../../src/engine/index.js';
import { chain, fn, ports, run, start, workflow } from './helpers.js';

function loop(id: string, count: number, blocks: BlockDefinition[]): BlockDefinition {
  return { id, type: 'loop', name: id, config: { kind: 'for', count }, blocks };
}

function setVar(id = 'set', name = 'Set'): BlockDefinition {
  return { id, type: 'variables', name, config: { assignments: { last: '<loop.index>' } } };
}

/** 1,000 x 1,000 iterations of a variables block: a million steps without any I/O. */
const nested = workflow([start(), loop('outer', 1000, [loop('inner', 1000, [setVar()])])], chain('start', 'outer'));

describe('step budget', () => {
  it('has the documented defaults', () => {
    expect(RUN_DEFAULTS.maxSteps).toBe(100_000);
    expect(RUN_DEFAULTS.maxTraceEntries).toBe(2_000);
    expect(RUN_DEFAULTS.maxBlockOutputBytes).toBe(4 * 1024 * 1024);
  });

  it('a nested 1000 x 1000 loop fails with the default budget, naming the limit and the block', async () => {
    const r = await run(nested);
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Step budget exceeded: the run executed 100000 blocks (limit 100000); stopped at block "Set"');
    expect(r.error?.blockName).toBe('Set');
    expect(r.steps).toBe(100_000);
  }, 60_000);

  it('a small maxSteps stops quickly at the block that would exceed it', async () => {
    const r = await run(nested, { maxSteps: 50 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Step budget exceeded: the run executed 50 blocks (limit 50); stopped at block "Set"');
    expect(r.error?.blockId).toBe('set');
    // start, outer, inner, then 47 variables blocks
    expect(r.trace.filter((e) => e.blockId === 'set' && e.status === 'success')).toHaveLength(47);
  });

  it('is not caught by an error edge (the run fails)', async () => {
    const d = workflow(
      [start(), loop('outer', 10, [setVar()]), fn('handler', 'return "handled"')],
      [...chain('start', 'outer'), { from: 'outer', to: 'handler', on: 'error' }],
    );
    const r = await run(d, { maxSteps: 5 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toContain('Step budget exceeded');
    expect(r.trace.some((e) => e.blockId === 'handler')).toBe(false);
  });

  it('counts retry attempts', async () => {
    const d = workflow([start(), fn('flaky', 'throw new Error("nope")', { retry: { maxAttempts: 5, backoffMs: 0 } })], chain('start', 'flaky'));
    const r = await run(d, { maxSteps: 3 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Step budget exceeded: the run executed 3 blocks (limit 3); stopped at block "flaky"');
    expect(r.steps).toBe(3);
    const unlimited = await run(d);
    expect(unlimited.steps).toBe(6);
    expect(unlimited.error?.message).toBe('Block "flaky" failed: nope');
  });

  it('counts replayed steps', async () => {
    const d = workflow([start(), fn('a', 'return 1'), fn('b', 'return 2'), fn('c', 'return 3')], chain('start', 'a', 'b', 'c'));
    const steps: StepRecord[] = [];
    const first = await runWorkflow(compile(d), { input: {}, ports: ports(), onStep: async (s) => { steps.push(s); } });
    expect(first.steps).toBe(4);
    const recorded = new Map(steps.map((s) => [s.key, s]));
    const again = await runWorkflow(compile(d), { input: {}, ports: ports(), recorded, maxSteps: 3 });
    expect(again.status).toBe('failed');
    expect(again.error?.message).toBe('Step budget exceeded: the run executed 3 blocks (limit 3); stopped at block "c"');
  });
});

describe('yielding to the event loop', () => {
  it('a timer set before a long run fires while the run is still going', async () => {
    let ticks = 0;
    let runDone = false;
    let ticksWhileRunning = 0;
    const interval = setInterval(() => {
      ticks++;
      if (!runDone) ticksWhileRunning++;
    }, 1);
    let fired = false;
    setTimeout(() => {
      fired = true;
    }, 0);
    try {
      const r = await run(nested, { maxSteps: 20_000 });
      runDone = true;
      expect(r.status).toBe('failed');
    } finally {
      clearInterval(interval);
    }
    expect(fired).toBe(true);
    expect(ticksWhileRunning).toBeGreaterThan(0);
    expect(ticks).toBeGreaterThanOrEqual(ticksWhileRunning);
  }, 60_000);

  it('yields through the clock port every few hundred steps', async () => {
    let yields = 0;
    const clock: ClockPort = {
      now: () => 0, // frozen: only the step count triggers yields
      sleep: async () => undefined,
      yield: async () => {
        yields++;
      },
    };
    const r = await runWorkflow(compile(nested), { input: {}, ports: ports({ clock }), maxSteps: 2_000 });
    expect(r.status).toBe('failed');
    expect(yields).toBeGreaterThanOrEqual(9);
    expect(yields).toBeLessThanOrEqual(11);
  });
});

describe('block output cap', () => {
  it('fails a block whose output is over maxBlockOutputBytes, naming the limit', async () => {
    const d = workflow([start(), fn('Big', 'return "x".repeat(2000)')], chain('start', 'Big'));
    const r = await run(d, { maxBlockOutputBytes: 1000 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Block "Big" output is 2002 bytes, over the limit of 1000 bytes (maxBlockOutputBytes)');
    expect(r.error?.blockId).toBe('Big');
    expect((await run(d, { maxBlockOutputBytes: 2002 })).status).toBe('completed');
  });

  it('measures UTF-8 bytes of the JSON', async () => {
    const d = workflow([start(), fn('Big', 'return "é".repeat(400)')], chain('start', 'Big'));
    const r = await run(d, { maxBlockOutputBytes: 801 });
    expect(r.error?.message).toBe('Block "Big" output is 802 bytes, over the limit of 801 bytes (maxBlockOutputBytes)');
  });

  it('the default cap (4 MiB) stops a 30 MB output', async () => {
    const d = workflow([start(), fn('Big', 'return "x".repeat(30 * 1024 * 1024 - 2)')], chain('start', 'Big'));
    const r = await run(d);
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Block "Big" output is 31457280 bytes, over the limit of 4194304 bytes (maxBlockOutputBytes)');
  }, 30_000);

  it('routes through an error edge like any block error', async () => {
    const d = workflow(
      [start(), fn('Big', 'return "x".repeat(2000)'), fn('handler', 'return <big.error>')],
      [...chain('start', 'Big'), { from: 'Big', to: 'handler', on: 'error' }],
    );
    const r = await run(d, { maxBlockOutputBytes: 1000 });
    expect(r.status).toBe('completed');
    expect(r.output).toBe('Block "Big" output is 2002 bytes, over the limit of 1000 bytes (maxBlockOutputBytes)');
  });

  it('applies to containers (a loop\'s results)', async () => {
    const d = workflow([start(), loop('each', 10, [fn('f', 'return "x".repeat(100)')])], chain('start', 'each'));
    const r = await run(d, { maxBlockOutputBytes: 500 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/^Block "each" output is \d+ bytes, over the limit of 500 bytes \(maxBlockOutputBytes\)$/);
  });
});

describe('trace cap', () => {
  it('keeps maxTraceEntries entries and counts the dropped ones', async () => {
    const d = workflow([start(), loop('each', 30, [setVar()])], chain('start', 'each'));
    const r = await run(d, { maxTraceEntries: 10 });
    expect(r.status).toBe('completed');
    expect(r.trace).toHaveLength(10);
    // start + 30 iterations + the loop itself = 32 entries
    expect(r.traceTruncated).toBe(22);
    expect(r.steps).toBe(32);
    const full = await run(d);
    expect(full.trace).toHaveLength(32);
    expect(full.traceTruncated).toBeUndefined();
  });

  it('the default keeps 2,000 entries', async () => {
    const d = workflow([start(), loop('outer', 3, [loop('inner', 1000, [setVar()])])], chain('start', 'outer'));
    const r = await run(d);
    expect(r.status).toBe('completed');
    expect(r.trace).toHaveLength(2000);
    expect(r.traceTruncated).toBe(r.steps - 2000);
  }, 30_000);
});
