import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, runWorkflow, type BlockDefinition, type StepRecord } from '../../src/engine/index.js';
import { chain, fn, json, ports, run, start, startServer, workflow, type TestServer } from './helpers.js';

let server: TestServer;
let active = 0;
let peak = 0;
beforeAll(async () => {
  server = await startServer({
    '/delay': (req, _body, res) => {
      const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? '0');
      active++;
      peak = Math.max(peak, active);
      setTimeout(() => {
        active--;
        json(res, 200, { ms });
      }, ms);
    },
  });
});
afterAll(async () => {
  await server.close();
});

function loop(config: Record<string, unknown>, blocks: BlockDefinition[], id = 'each'): BlockDefinition {
  return { id, type: 'loop', name: id, config, blocks };
}

describe('loop', () => {
  it('for: runs count iterations with <loop.index>; results are each iteration\'s last leaf', async () => {
    const d = workflow(
      [start(), loop({ kind: 'for', count: 3 }, [fn('a', 'return <loop.index> * 10'), fn('b', 'return <a> + 1')]), fn('after', 'return <each.results>')],
      [...chain('start', 'each', 'after'), { from: 'a', to: 'b' }],
    );
    const r = await run(d);
    expect(r.status).toBe('completed');
    expect(r.output).toEqual([1, 11, 21]);
    expect(r.trace.filter((t) => t.blockId === 'b').map((t) => t.key)).toEqual(['b#each:0', 'b#each:1', 'b#each:2']);
  });

  it('forEach: arrays, objects as [key, value] entries, <loop.currentItem> and <loop.items>', async () => {
    const d = workflow(
      [start([{ name: 'items', type: 'object' }]), loop({ kind: 'forEach', items: '<start.items>' }, [fn('f', 'return [<loop.index>, <loop.currentItem>, <loop.items>.length]')])],
      chain('start', 'each'),
    );
    const r = await run(d, { input: { items: { x: 1, y: 2 } } });
    expect(r.output).toEqual({ results: [[0, ['x', 1], 2], [1, ['y', 2], 2]] });
    const d2 = workflow([start(), loop({ kind: 'forEach', items: [5, 6] }, [fn('f', 'return <loop.currentItem> * 2')])], chain('start', 'each'));
    expect((await run(d2)).output).toEqual({ results: [10, 12] });
  });

  it('forEach over nothing fails with a clear message; an empty array runs zero times', async () => {
    const d = workflow([start([{ name: 'items', type: 'array' }]), loop({ kind: 'forEach', items: '<start.items>' }, [fn('f', 'return 1')])], chain('start', 'each'));
    expect((await run(d, { input: { items: [] } })).output).toEqual({ results: [] });
    const r = await run(d, { input: {} });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Block "each" failed: items must be an array or object; got nothing');
  });

  it('while: checks the condition before each iteration, reading the previous iteration', async () => {
    const d = workflow(
      [start(), loop({ kind: 'while', condition: '<loop.index> === 0 || <inc> < 4' }, [fn('inc', 'return (<loop.index> + 1) * 2')])],
      chain('start', 'each'),
    );
    expect((await run(d)).output).toEqual({ results: [2, 4] });
    const never = workflow([start(), loop({ kind: 'while', condition: 'false' }, [fn('inc', 'return 1')])], chain('start', 'each'));
    expect((await run(never)).output).toEqual({ results: [] });
  });

  it('doWhile: runs the body first, then checks', async () => {
    const d = workflow([start(), loop({ kind: 'doWhile', condition: 'false' }, [fn('x', "return 'once'")])], chain('start', 'each'));
    expect((await run(d)).output).toEqual({ results: ['once'] });
    const d2 = workflow([start(), loop({ kind: 'doWhile', condition: '<loop.index> < 3' }, [fn('x', 'return <loop.index>')])], chain('start', 'each'));
    expect((await run(d2)).output).toEqual({ results: [0, 1, 2] });
  });

  it('every kind is capped by loopCap (exceeding = block error)', async () => {
    const forLoop = workflow([start(), loop({ kind: 'for', count: 6 }, [fn('x', 'return 1')])], chain('start', 'each'));
    const r1 = await run(forLoop, { loopCap: 5 });
    expect(r1.status).toBe('failed');
    expect(r1.error?.message).toBe('Block "each" failed: loop of 6 iterations exceeds the maximum of 5 iterations');
    expect((await run(forLoop, { loopCap: 6 })).status).toBe('completed');

    const forEach = workflow([start(), loop({ kind: 'forEach', items: [1, 2, 3] }, [fn('x', 'return 1')])], chain('start', 'each'));
    expect((await run(forEach, { loopCap: 2 })).error?.message).toMatch(/exceeds the maximum of 2 iterations/);

    const endless = workflow([start(), loop({ kind: 'while', condition: 'true' }, [fn('x', 'return 1')])], chain('start', 'each'));
    const r2 = await run(endless, { loopCap: 4 });
    expect(r2.error?.message).toBe('Block "each" failed: loop exceeded the maximum of 4 iterations');
    expect(r2.trace.filter((t) => t.blockId === 'x')).toHaveLength(4);

    const endlessDo = workflow([start(), loop({ kind: 'doWhile', condition: 'true' }, [fn('x', 'return 1')])], chain('start', 'each'));
    expect((await run(endlessDo, { loopCap: 3 })).error?.message).toBe('Block "each" failed: loop exceeded the maximum of 3 iterations');
  });

  it('a failing child fails the run naming the child; an error edge on the loop catches it', async () => {
    const d = workflow(
      [start(), loop({ kind: 'for', count: 3 }, [fn('inner', "if (<loop.index> === 1) throw new Error('bad item'); return 1")]), fn('handler', 'return <each.error>')],
      chain('start', 'each'),
    );
    const r = await run(d);
    expect(r.status).toBe('failed');
    expect(r.error).toEqual({ message: 'Block "inner" failed: bad item', blockId: 'inner', blockName: 'inner' });
    d.edges.push({ from: 'each', to: 'handler', on: 'error' });
    const r2 = await run(d);
    expect(r2.status).toBe('completed');
    expect(r2.output).toBe('Block "inner" failed: bad item');
  });

  it('condition branches inside a loop iteration; variables carry across iterations', async () => {
    const d = workflow(
      [
        start(),
        loop({ kind: 'for', count: 4 }, [
          { id: 'c', type: 'condition', name: 'c', config: { conditions: [{ id: 'even', expression: '<loop.index> % 2 === 0' }, { id: 'else' }] } },
          fn('even', "return 'even'"),
          { id: 'acc', type: 'variables', name: 'acc', config: { assignments: { count: '<variable.count>' } } },
          fn('bump', 'return <variable.count> + 1'),
          { id: 'store', type: 'variables', name: 'store', config: { assignments: { count: '<bump>' } } },
        ]),
      ],
      [
        ...chain('start', 'each'),
        { from: 'c', to: 'even', branch: 'even' },
        { from: 'c', to: 'acc', branch: 'else' },
        { from: 'acc', to: 'bump' },
        { from: 'bump', to: 'store' },
      ],
      { variables: { count: 0 } },
    );
    const r = await run(d);
    expect(r.output).toEqual({ results: ['even', { count: 1 }, 'even', { count: 2 }] });
    expect(r.variables).toEqual({ count: 2 });
  });
});

describe('parallel', () => {
  it('runs branches concurrently bounded by parallelFanOut; results in branch order', async () => {
    peak = 0;
    const d = workflow(
      [
        start(),
        {
          id: 'par', type: 'parallel', name: 'par', config: { kind: 'collection', items: [80, 10, 50, 0, 30, 20, 60] },
          blocks: [
            { id: 'h', type: 'http', name: 'h', config: { url: `${server.url}/delay`, query: { ms: '<parallel.currentItem>' } } },
            fn('pick', 'return [<parallel.index>, <h.data.ms>, <parallel.items>.length]'),
          ],
        },
      ],
      [...chain('start', 'par'), { from: 'h', to: 'pick' }],
    );
    const r = await run(d, { parallelFanOut: 3 });
    expect(r.status).toBe('completed');
    expect(peak).toBe(3);
    expect(r.output).toEqual({ results: [[0, 80, 7], [1, 10, 7], [2, 50, 7], [3, 0, 7], [4, 30, 7], [5, 20, 7], [6, 60, 7]] });
  });

  it('count kind, and the maxParallelBranches cap', async () => {
    const d = workflow([start(), { id: 'par', type: 'parallel', name: 'par', config: { kind: 'count', count: 4 }, blocks: [fn('x', 'return <parallel.index> * <parallel.index>')] }], chain('start', 'par'));
    expect((await run(d)).output).toEqual({ results: [0, 1, 4, 9] });
    const r = await run(d, { maxParallelBranches: 3 });
    expect(r.error?.message).toBe('Block "par" failed: parallel of 4 branches exceeds the maximum of 3 branches');
  });

  it('a nested loop inside a parallel gets deterministic step keys and the right scope values', async () => {
    const d = workflow(
      [
        start(),
        {
          id: 'outer', type: 'parallel', name: 'outer', config: { kind: 'collection', items: ['a', 'b'] },
          blocks: [
            {
              id: 'inner', type: 'loop', name: 'inner', config: { kind: 'for', count: 2 },
              blocks: [fn('b', 'return <parallel.currentItem> + <loop.index>')],
            },
            fn('sum', 'return <inner.results>.join(",")'),
          ],
        },
      ],
      [...chain('start', 'outer'), { from: 'inner', to: 'sum' }],
    );
    const steps: StepRecord[] = [];
    const r = await runWorkflow(compile(d), { input: {}, ports: ports(), onStep: async (s) => { steps.push(s); } });
    expect(r.output).toEqual({ results: ['a0,a1', 'b0,b1'] });
    const keys = steps.map((s) => s.key).sort();
    expect(keys).toEqual(['b#outer:0#inner:0', 'b#outer:0#inner:1', 'b#outer:1#inner:0', 'b#outer:1#inner:1', 'inner#outer:0', 'inner#outer:1', 'outer', 'start', 'sum#outer:0', 'sum#outer:1']);
    expect(steps.find((s) => s.key === 'b#outer:1#inner:0')?.output).toBe('b0');
  });

  it('a failing branch fails the parallel and names the inner block', async () => {
    const d = workflow(
      [start(), { id: 'par', type: 'parallel', name: 'par', config: { kind: 'count', count: 3 }, blocks: [fn('x', "if (<parallel.index> === 2) throw new Error('branch 2 broke'); return 1")] }],
      chain('start', 'par'),
    );
    const r = await run(d);
    expect(r.status).toBe('failed');
    expect(r.error).toMatchObject({ message: 'Block "x" failed: branch 2 broke', blockId: 'x' });
  });
});
