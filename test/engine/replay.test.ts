import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, runWorkflow, type RunOptions, type RunResult, type StepRecord, type WorkflowDefinition } from '../../src/engine/index.js';
import { chain, fn, json, ports, start, startServer, workflow, type TestServer } from './helpers.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({
    '/a': (_req, _body, res) => json(res, 200, { n: server.hits.get('/a') }),
    '/b': (_req, _body, res) => json(res, 200, { n: server.hits.get('/b') }),
    '/side': (_req, _body, res) => json(res, 200, { ok: true }),
    '/slow': (_req, _body, res) => void setTimeout(() => json(res, 200, { ok: true }), 100),
  });
});
afterAll(async () => {
  await server.close();
});

async function exec(def: WorkflowDefinition, recorded: StepRecord[] = [], opts: Partial<RunOptions> = {}): Promise<{ result: RunResult; steps: StepRecord[] }> {
  const steps: StepRecord[] = [];
  const result = await runWorkflow(compile(def), {
    input: {},
    ports: ports(),
    recorded: new Map(recorded.map((s) => [s.key, s])),
    onStep: async (s) => { steps.push(s); },
    ...opts,
  });
  return { result, steps };
}

describe('durable replay', () => {
  const def = () => workflow(
    [
      start([{ name: 'x', type: 'number' }]),
      { id: 'ha', type: 'http', name: 'HA', config: { url: `${server.url}/a` } },
      fn('f', 'return <ha.data.n> + <start.x>'),
      { id: 'set', type: 'variables', name: 'Set', config: { assignments: { seen: '<f>' } } },
      { id: 'hb', type: 'http', name: 'HB', config: { url: `${server.url}/b` } },
      fn('out', 'return { f: <f>, b: <hb.data.n>, seen: <variable.seen> }'),
    ],
    chain('start', 'ha', 'f', 'set', 'hb', 'out'),
  );

  it('a re-run with every step recorded executes nothing again and gives the same result', async () => {
    server.hits.clear();
    const first = await exec(def(), [], { input: { x: 10 } });
    expect(first.result.output).toEqual({ f: 11, b: 1, seen: 11 });
    expect(first.steps.map((s) => s.key)).toEqual(['start', 'ha', 'f', 'set', 'hb', 'out']);
    expect(first.steps.find((s) => s.key === 'set')?.variables).toEqual({ seen: 11 });

    const again = await exec(def(), first.steps, { input: { x: 10 } });
    expect(again.result.status).toBe('completed');
    expect(again.result.output).toEqual({ f: 11, b: 1, seen: 11 });
    expect(again.result.variables).toEqual({ seen: 11 });
    expect(again.result.trace.every((t) => t.status === 'replayed')).toBe(true);
    expect(again.steps).toEqual([]);
    expect(server.hits.get('/a')).toBe(1);
    expect(server.hits.get('/b')).toBe(1);
  });

  it('after a crash, recorded steps are replayed and the rest runs (variables restored)', async () => {
    server.hits.clear();
    const first = await exec(def(), [], { input: { x: 1 } });
    const upToSet = first.steps.slice(0, 4); // crashed after "set" was recorded
    const resumed = await exec(def(), upToSet, { input: { x: 1 } });
    expect(resumed.result.trace.map((t) => [t.blockId, t.status])).toEqual([
      ['start', 'replayed'], ['ha', 'replayed'], ['f', 'replayed'], ['set', 'replayed'], ['hb', 'success'], ['out', 'success'],
    ]);
    expect(resumed.result.output).toEqual({ f: 2, b: 2, seen: 2 });
    expect(resumed.steps.map((s) => s.key)).toEqual(['hb', 'out']);
    expect(server.hits.get('/a')).toBe(1);
    expect(server.hits.get('/b')).toBe(2);
  });

  it('onStep runs before dependants start, and a recorded error is replayed down the error edge', async () => {
    const order: string[] = [];
    const d = workflow(
      [start(), fn('bad', "throw new Error('nope')"), fn('ok', 'return 1'), fn('handler', 'return <bad.error>')],
      [...chain('start', 'bad', 'ok'), { from: 'bad', to: 'handler', on: 'error' }],
    );
    const steps: StepRecord[] = [];
    const r = await runWorkflow(compile(d), {
      input: {}, ports: ports(),
      onStep: async (s) => { order.push(`record ${s.key}`); await new Promise((res) => setTimeout(res, 5)); steps.push(s); order.push(`recorded ${s.key}`); },
    });
    expect(order).toEqual(['record start', 'recorded start', 'record bad', 'recorded bad', 'record handler', 'recorded handler']);
    expect(r.output).toBe('nope');
    const again = await exec(d, steps.slice(0, 2));
    expect(again.result.output).toBe('nope');
    expect(again.result.trace.map((t) => [t.blockId, t.status])).toEqual([['start', 'replayed'], ['bad', 'replayed'], ['handler', 'success']]);
  });

  it('a recorded container is not re-run', async () => {
    server.hits.clear();
    const d = workflow(
      [start(), { id: 'each', type: 'loop', name: 'Each', config: { kind: 'for', count: 3 }, blocks: [{ id: 'h', type: 'http', name: 'H', config: { url: `${server.url}/side` } }] }, fn('n', 'return <each.results>.length')],
      chain('start', 'each', 'n'),
    );
    const first = await exec(d);
    expect(server.hits.get('/side')).toBe(3);
    const containerOnly = first.steps.filter((s) => s.key === 'start' || s.key === 'each');
    const again = await exec(d, containerOnly);
    expect(again.result.output).toBe(3);
    expect(server.hits.get('/side')).toBe(3);
    // Inner steps alone also replay: iterations re-run from their records.
    const innerOnly = first.steps.filter((s) => s.key !== 'each' && s.key !== 'n');
    const again2 = await exec(d, innerOnly);
    expect(again2.result.output).toBe(3);
    expect(server.hits.get('/side')).toBe(3);
  });

  it('onStep says which step ends the run: the last block of the top level, with nothing else running', async () => {
    const ends = async (d: WorkflowDefinition) => {
      const seen: string[] = [];
      const r = await runWorkflow(compile(d), {
        input: {}, ports: ports(), onStep: async (s, how) => { if (how.endsRun) seen.push(s.key); },
      });
      expect(r.error ?? null).toBeNull();
      return seen;
    };
    // A chain: its last block.
    expect(await ends(workflow([start(), fn('a', 'return 1'), fn('b', 'return 2')], chain('start', 'a', 'b')))).toEqual(['b']);
    // Followed only by a response block (pure, it ends the run): both.
    expect(await ends(workflow(
      [start(), fn('a', 'return 1'), fn('b', 'return 2'), { id: 'reply', type: 'response', name: 'Reply', config: { data: '<b>' } }],
      chain('start', 'a', 'b', 'reply'),
    ))).toEqual(['b', 'reply']);
    // Two branches: the one that finishes first leaves the other running, so only the later one ends the run.
    expect(await ends(workflow(
      [start(), fn('quick', 'return 1'), { id: 'slow', type: 'http', name: 'Slow', config: { url: `${server.url}/slow` } }],
      [{ from: 'start', to: 'quick' }, { from: 'start', to: 'slow' }],
    ))).toEqual(['slow']);
    // A condition whose only edge is not taken ends the run, but it has an edge: no step is marked (kept on the safe side).
    expect(await ends(workflow(
      [start(), { id: 'c', type: 'condition', name: 'C', config: { conditions: [{ id: 'yes', expression: 'false' }, { id: 'else' }] } }, fn('then', 'return 1')],
      [{ from: 'start', to: 'c' }, { from: 'c', to: 'then', branch: 'yes' }],
    ))).toEqual([]);
    // Inside a loop: the iterations' blocks never end the run; the loop, last at the top level, does.
    expect(await ends(workflow(
      [start(), { id: 'each', type: 'loop', name: 'Each', config: { kind: 'for', count: 2 }, blocks: [fn('inner', 'return 1')] }],
      chain('start', 'each'),
    ))).toEqual(['each']);
  });

  it('a failure of onStep fails the run', async () => {
    const d = workflow([start(), fn('f', 'return 1')], chain('start', 'f'));
    const r = await runWorkflow(compile(d), { input: {}, ports: ports(), onStep: async (s) => { if (s.key === 'f') throw new Error('disk full'); } });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Block "f" failed: could not record the step: disk full');
  });
});

describe('human in the loop', () => {
  it('pauses its branch, lets other branches finish, and resumes through recorded', async () => {
    server.hits.clear();
    const d = workflow(
      [
        start(),
        { id: 'approve', type: 'human', name: 'Approve', config: { message: 'Ship it?', fields: [{ name: 'approved', type: 'boolean', required: true }] } },
        fn('decide', "return <approve.approved> ? 'shipped' : 'held'"),
        { id: 'side', type: 'http', name: 'Side', config: { url: `${server.url}/side` } },
        { id: 'resp', type: 'response', name: 'Resp', config: { data: { result: '<decide>' } } },
      ],
      [...chain('start', 'approve', 'decide', 'resp'), { from: 'start', to: 'side' }],
    );
    const first = await exec(d);
    expect(first.result.status).toBe('paused');
    expect(first.result.pausePoints).toEqual([
      { contextId: 'approve', blockId: 'approve', key: 'approve', response: { message: 'Ship it?', fields: [{ name: 'approved', type: 'boolean', required: true }] } },
    ]);
    expect(first.result.trace.find((t) => t.blockId === 'approve')?.status).toBe('paused');
    expect(server.hits.get('/side')).toBe(1);
    expect(first.steps.map((s) => s.key).sort()).toEqual(['side', 'start']);

    const resume = [...first.steps, { key: 'approve', blockId: 'approve', output: { approved: true } }];
    const second = await exec(d, resume);
    expect(second.result.status).toBe('completed');
    expect(second.result.response?.data).toEqual({ result: 'shipped' });
    expect(server.hits.get('/side')).toBe(1);
    expect(second.steps.map((s) => s.key)).toEqual(['decide', 'resp']);
  });

  const parallelDef = () => workflow(
    [
      start(),
      {
        id: 'par', type: 'parallel', name: 'Par', config: { kind: 'collection', items: ['alpha', 'beta'] },
        blocks: [
          { id: 'h', type: 'human', name: 'H', config: { message: 'Review <parallel.currentItem>', fields: [{ name: 'ok', type: 'boolean' }] } },
          fn('after', 'return <parallel.currentItem> + ":" + <h.ok>'),
        ],
      },
    ],
    [...chain('start', 'par'), { from: 'h', to: 'after' }],
  );

  for (const order of [[1, 0], [0, 1]]) {
    it(`inside a parallel: two pause points, resumed in order ${order.join(' then ')}`, async () => {
      const first = await exec(parallelDef());
      expect(first.result.status).toBe('paused');
      const points = [...(first.result.pausePoints ?? [])].sort((a, b) => a.contextId.localeCompare(b.contextId));
      expect(points).toEqual([
        { contextId: 'h_p0', blockId: 'h', key: 'h#par:0', response: { message: 'Review alpha', fields: [{ name: 'ok', type: 'boolean' }] }, parallelScope: { parallelId: 'par', branchIndex: 0, branchTotal: 2 } },
        { contextId: 'h_p1', blockId: 'h', key: 'h#par:1', response: { message: 'Review beta', fields: [{ name: 'ok', type: 'boolean' }] }, parallelScope: { parallelId: 'par', branchIndex: 1, branchTotal: 2 } },
      ]);
      let recorded = [...first.steps];
      const [firstIdx, secondIdx] = order;
      recorded.push({ key: `h#par:${firstIdx}`, blockId: 'h', output: { ok: firstIdx === 0 } });
      const second = await exec(parallelDef(), recorded);
      expect(second.result.status).toBe('paused');
      expect(second.result.pausePoints?.map((p) => p.contextId)).toEqual([`h_p${secondIdx}`]);
      expect(second.steps.map((s) => s.key)).toEqual([`after#par:${firstIdx}`]);
      recorded = [...recorded, ...second.steps, { key: `h#par:${secondIdx}`, blockId: 'h', output: { ok: secondIdx === 0 } }];
      const third = await exec(parallelDef(), recorded);
      expect(third.result.status).toBe('completed');
      expect(third.result.output).toEqual({ results: ['alpha:true', 'beta:false'] });
      expect(third.steps.map((s) => s.key)).toEqual([`after#par:${secondIdx}`, 'par']);
    });
  }

  it('inside a loop: pauses per iteration with loop scope', async () => {
    const d = workflow(
      [
        start(),
        { id: 'each', type: 'loop', name: 'Each', config: { kind: 'forEach', items: ['x', 'y'] }, blocks: [{ id: 'h', type: 'human', name: 'H', config: { message: 'ok <loop.currentItem>?' } }, fn('f', 'return <h.answer>')] },
      ],
      [...chain('start', 'each'), { from: 'h', to: 'f' }],
    );
    const r1 = await exec(d);
    expect(r1.result.status).toBe('paused');
    expect(r1.result.pausePoints).toEqual([{ contextId: 'h_loop0', blockId: 'h', key: 'h#each:0', response: { message: 'ok x?', fields: [] }, loopScope: { loopId: 'each', iteration: 0 } }]);
    let rec = [...r1.steps, { key: 'h#each:0', blockId: 'h', output: { answer: 'A' } }];
    const r2 = await exec(d, rec);
    expect(r2.result.status).toBe('paused');
    expect(r2.result.pausePoints?.map((p) => [p.contextId, p.key, p.response])).toEqual([['h_loop1', 'h#each:1', { message: 'ok y?', fields: [] }]]);
    rec = [...rec, ...r2.steps, { key: 'h#each:1', blockId: 'h', output: { answer: 'B' } }];
    const r3 = await exec(d, rec);
    expect(r3.result.status).toBe('completed');
    expect(r3.result.output).toEqual({ results: ['A', 'B'] });
  });
});
