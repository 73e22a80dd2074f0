// A run and its child runs (workflow blocks) are one tree: one step budget, one bound on held outputs, one
// concurrency and one pacing of the event loop (RunTree in src/engine/run-state.ts). Each child run used to get
// all four afresh (security finding, high).
import { describe, expect, it } from 'vitest';
import {
  compile, realClock, runWorkflow,
  type BlockDefinition, type ChildWorkflowPort, type ClockPort, type CompiledGraph, type RunOptions, type SandboxPort, type WorkflowDefinition,
} from '../../src/engine/index.js';
import { chain, fn, ports, start, workflow } from './helpers.js';

const wf = (id: string, workflowId: string, extra: Partial<BlockDefinition> = {}): BlockDefinition => ({ id, type: 'workflow', name: id, config: { workflowId }, ...extra });
const loop = (id: string, count: number, body: BlockDefinition): BlockDefinition => ({ id, type: 'loop', name: id, config: { kind: 'for', count }, blocks: [body] });
const parallel = (id: string, count: number, body: BlockDefinition[]): BlockDefinition => ({ id, type: 'parallel', name: id, config: { kind: 'count', count }, blocks: body });

/** A child-workflow port over a library of definitions that passes the calling run's options on, as the service does. */
function library(defs: Record<string, WorkflowDefinition>, base: () => Partial<RunOptions>): ChildWorkflowPort {
  const compiled = new Map<string, CompiledGraph>(Object.entries(defs).map(([id, d]) => [id, compile(d)]));
  const port: ChildWorkflowPort = {
    async run(workflowId, input, opts) {
      const graph = compiled.get(workflowId);
      if (!graph) return { success: false, output: null, error: `workflow ${workflowId} not found` };
      const r = await runWorkflow(graph, { ports: ports({ workflows: port }), ...base(), input, ...opts });
      return r.status === 'completed' ? { success: true, output: r.output } : { success: false, output: null, error: r.error?.message };
    },
  };
  return port;
}

/**
 * A sandbox that answers after a few event-loop turns and counts the calls in flight at once (each function
 * block is one); `gate` may hold a call back until the test lets it go.
 */
function countingSandbox(gate: (code: string) => Promise<void> = () => Promise.resolve()) {
  const s = { inFlight: 0, peak: 0, calls: 0 };
  const sandbox: SandboxPort = {
    async run(req) {
      s.calls++;
      s.inFlight++;
      s.peak = Math.max(s.peak, s.inFlight);
      try {
        await gate(req.code);
        for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
        const big = /'big'/.test(req.code);
        return { value: big ? 'x'.repeat(600) : 1, logs: [] };
      } finally {
        s.inFlight--;
      }
    },
  };
  return { sandbox, stats: s };
}

describe('a run tree', () => {
  it('counts every step of its child runs against one step budget, which no error edge catches', async () => {
    // Five children of 32 steps each (start, loop, 30 iterations) and the parent's 7: 167 steps, each run under 100.
    const child = workflow([start(), loop('repeat', 30, fn('f', 'return 1'))], chain('start', 'repeat'));
    const parent = workflow([start(), parallel('fan', 5, [wf('call', 'child')]), fn('handled', 'return "handled"')], [
      ...chain('start', 'fan'),
      { from: 'fan', to: 'handled', on: 'error' },
    ]);
    const { sandbox } = countingSandbox();
    const children = library({ child }, () => ({ ports: ports({ sandbox, workflows: children }) }));
    const r = await runWorkflow(compile(parent), { input: {}, ports: ports({ sandbox, workflows: children }), maxSteps: 100 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/^Step budget exceeded: the run executed 100 blocks \(limit 100\); stopped at block "(f|repeat|start|call)"$/);
  });

  it('runs at most maxConcurrency blocks at once across the whole tree', async () => {
    // Four children at once, each running six function blocks at once: 24 wanted, 4 allowed.
    const child = workflow([start(), parallel('six', 6, [fn('f', 'return 1')])], chain('start', 'six'));
    const parent = workflow([start(), parallel('fan', 4, [wf('call', 'child')])], chain('start', 'fan'));
    const { sandbox, stats } = countingSandbox();
    const children = library({ child }, () => ({ ports: ports({ sandbox, workflows: children }) }));
    const r = await runWorkflow(compile(parent), { input: {}, ports: ports({ sandbox, workflows: children }), maxConcurrency: 4 });
    expect(r.status, r.error?.message).toBe('completed');
    expect(stats.calls).toBe(24);
    expect(stats.peak).toBe(4);
  });

  it('does not deadlock a chain of nested workflow blocks as deep as the nesting limit, with 2 blocks at once', async () => {
    // level0 (the run) calls level1 ... level10 (depth 10, the limit); each level also runs two function blocks
    // beside its workflow block. A workflow block lends its slot while its child runs: holding it, level1 would
    // wait forever for a slot.
    const defs: Record<string, WorkflowDefinition> = {};
    for (let i = 0; i <= 10; i++) {
      // The workflow block starts first and takes a slot before the function blocks.
      const blocks = [...(i < 10 ? [wf('deeper', `level${i + 1}`)] : []), fn('a', 'return 1'), fn('b', 'return 1')];
      defs[`level${i}`] = workflow([start(), ...blocks], blocks.map((b) => ({ from: 'start', to: b.id })));
    }
    const { sandbox, stats } = countingSandbox();
    const children = library(defs, () => ({ ports: ports({ sandbox, workflows: children }) }));
    const r = await runWorkflow(compile(defs.level0), { input: {}, ports: ports({ sandbox, workflows: children }), maxConcurrency: 2 });
    expect(r.status, r.error?.message).toBe('completed');
    expect(stats.calls).toBe(22);
    expect(stats.peak).toBe(2);
  });

  it('yields the event loop every 200 steps of the whole tree, not of each run', async () => {
    // Twenty children of 152 steps: each under the 200 steps after which a run yields, 3,000 and more together.
    // The clock stands still, so only the step count paces the tree.
    let sinceYield = 0;
    let mostBetweenYields = 0;
    let yields = 0;
    const clock: ClockPort = {
      now: () => 1_700_000_000_000,
      sleep: realClock.sleep,
      yield: () => new Promise<void>((resolve) => setImmediate(() => {
        yields++;
        mostBetweenYields = Math.max(mostBetweenYields, sinceYield);
        sinceYield = 0;
        resolve();
      })),
    };
    const sandbox: SandboxPort = {
      run: async () => {
        sinceYield++;
        return { value: 1, logs: [] };
      },
    };
    const child = workflow([start(), loop('repeat', 150, fn('f', 'return 1'))], chain('start', 'repeat'));
    const parent = workflow([start(), parallel('fan', 20, [wf('call', 'child')])], chain('start', 'fan'));
    const children = library({ child }, () => ({ ports: ports({ sandbox, clock, workflows: children }) }));
    const r = await runWorkflow(compile(parent), { input: {}, ports: ports({ sandbox, clock, workflows: children }) });
    expect(r.status, r.error?.message).toBe('completed');
    mostBetweenYields = Math.max(mostBetweenYields, sinceYield);
    expect(yields).toBeGreaterThanOrEqual(15);
    expect(mostBetweenYields).toBeLessThanOrEqual(200);
  });

  it('bounds the block outputs its runs hold at once, and lets a finished child run\'s go', async () => {
    // Each child holds a 602-byte output until it ends; the tree may hold 1,000 bytes.
    let bigsDone = 0;
    let release: () => void = () => undefined;
    const bothBig = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { sandbox } = countingSandbox(async (code) => {
      // The small block of each child waits until both children hold their big output.
      if (/'big'/.test(code)) {
        if (++bigsDone === 2) release();
        return;
      }
      await bothBig;
      // Well after the second big output is held (three turns after its call).
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    });
    const child = workflow([start(), fn('big', "return 'big'"), fn('small', 'return 1')], chain('start', 'big', 'small'));
    const children = library({ child }, () => ({ ports: ports({ sandbox, workflows: children }) }));
    const atOnce = workflow([start(), parallel('fan', 2, [wf('call', 'child')])], chain('start', 'fan'));
    const r = await runWorkflow(compile(atOnce), { input: {}, ports: ports({ sandbox, workflows: children }), maxRunOutputBytes: 1000 });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/^Run output limit exceeded: the run would hold \d+ bytes of block outputs \(limit 1000 bytes, maxRunOutputBytes\); stopped at block "big"$/);

    // One after the other, each child's outputs are let go when it ends: the tree never holds both.
    const oneByOne = workflow([start(), wf('first', 'child'), wf('second', 'child')], chain('start', 'first', 'second'));
    const { sandbox: plain } = countingSandbox();
    const sequential = library({ child }, () => ({ ports: ports({ sandbox: plain, workflows: sequential }) }));
    const ok = await runWorkflow(compile(oneByOne), { input: {}, ports: ports({ sandbox: plain, workflows: sequential }), maxRunOutputBytes: 1000 });
    expect(ok.status, ok.error?.message).toBe('completed');
  });
});
