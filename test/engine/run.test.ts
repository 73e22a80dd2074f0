import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, runWorkflow, type SandboxPort, type StepRecord } from '../../src/engine/index.js';
import { chain, fn, json, ports, run, start, startServer, workflow, type TestServer } from './helpers.js';

describe('start block', () => {
  const def = workflow(
    [
      start([
        { name: 'ticket', type: 'string', required: true },
        { name: 'n', type: 'number' },
        { name: 'flag', type: 'boolean' },
        { name: 'obj', type: 'object' },
        { name: 'list', type: 'array', default: [1] },
      ]),
    ],
    [],
  );

  it('coerces declared fields, reading input.input first, and keeps the raw input', async () => {
    const input = { input: { ticket: 'a', n: '42' }, ticket: 'ignored', flag: 'true', obj: '{"k":1}' };
    const r = await run(def, { input });
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ ticket: 'a', n: 42, flag: true, obj: { k: 1 }, list: [1], input });
  });

  it('fails naming a missing required field', async () => {
    const r = await run(def, { input: {} });
    expect(r.status).toBe('failed');
    expect(r.error).toEqual({ message: 'Block "Start" failed: Missing required input field "ticket"', blockId: 'start', blockName: 'Start' });
  });

  it('fails naming a field whose value cannot be coerced', async () => {
    const r = await run(def, { input: { ticket: 'x', n: 'forty' } });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Block "Start" failed: Input field "n" must be of type number; got "forty"');
  });

  it('passes the raw input through when no fields are declared', async () => {
    const r = await run(workflow([start()], []), { input: { a: 1, b: [2] } });
    expect(r.output).toEqual({ a: 1, b: [2] });
  });
});

describe('function block', () => {
  it('runs code with injected references and captures console output', async () => {
    const r = await run(
      workflow([start([{ name: 'n', type: 'number' }]), fn('f', "console.log('n is', <start.n>); console.warn({ w: 1 }); return { double: <start.n> * 2 }")], chain('start', 'f')),
      { input: { n: 21 } },
    );
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ double: 42 });
    const t = r.trace.find((x) => x.blockId === 'f');
    expect(t?.logs).toEqual([
      { level: 'log', message: 'n is 21' },
      { level: 'warn', message: '{"w":1}' },
    ]);
    expect(t?.input).toEqual({ code: expect.stringContaining('<start.n>'), timeoutMs: 10000 });
  });

  it('a thrown error fails the run with a message naming the block', async () => {
    const r = await run(workflow([start(), { ...fn('score', "throw new Error('boom')"), name: 'Score' }, fn('after', 'return 1')], chain('start', 'score', 'after')));
    expect(r.status).toBe('failed');
    expect(r.error).toEqual({ message: 'Block "Score" failed: boom', blockId: 'score', blockName: 'Score' });
    expect(r.trace.map((t) => [t.blockId, t.status])).toEqual([['start', 'success'], ['score', 'error']]);
  });
});

describe('condition branching', () => {
  const def = workflow(
    [
      start([{ name: 'v', type: 'number', required: true }]),
      { id: 'route', type: 'condition', name: 'Route', config: { conditions: [{ id: 'big', expression: '<start.v> > 10' }, { id: 'mid', expression: '<start.v> > 5' }, { id: 'else' }] } },
      fn('big', "return 'big'"),
      fn('mid', "return 'mid'"),
      fn('small', "return 'small'"),
      fn('join', 'return [<big>, <mid>, <small>]'),
    ],
    [
      { from: 'start', to: 'route' },
      { from: 'route', to: 'big', branch: 'big' },
      { from: 'route', to: 'mid', branch: 'mid' },
      { from: 'route', to: 'small', branch: 'else' },
      { from: 'big', to: 'join' },
      { from: 'mid', to: 'join' },
      { from: 'small', to: 'join' },
    ],
  );

  it('takes the first truthy branch and the join runs once with untaken branches null', async () => {
    const r = await run(def, { input: { v: 7 } });
    expect(r.status).toBe('completed');
    expect(r.output).toEqual([null, 'mid', null]);
    expect(r.trace.find((t) => t.blockId === 'route')?.output).toEqual({ selectedOption: 'mid', conditionResult: true });
    expect(r.trace.map((t) => t.blockId)).toEqual(['start', 'route', 'mid', 'join']);
  });

  it('falls back to else', async () => {
    expect((await run(def, { input: { v: 1 } })).output).toEqual([null, null, 'small']);
    expect((await run(def, { input: { v: 11 } })).output).toEqual(['big', null, null]);
  });

  it('with no match and no else nothing downstream fires', async () => {
    const d = workflow(
      [start(), { id: 'c', type: 'condition', name: 'C', config: { conditions: [{ id: 'never', expression: 'false' }] } }, fn('x', 'return 1')],
      [{ from: 'start', to: 'c' }, { from: 'c', to: 'x', branch: 'never' }],
    );
    const r = await run(d);
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ selectedOption: null, conditionResult: false });
    expect(r.trace.map((t) => t.blockId)).toEqual(['start', 'c']);
  });

  it('an expression that throws fails the block naming the condition', async () => {
    const d = workflow([start(), { id: 'c', type: 'condition', name: 'C', config: { conditions: [{ id: 'bad', expression: 'nope.x' }, { id: 'else' }] } }], chain('start', 'c'));
    const r = await run(d);
    expect(r.error?.message).toBe('Block "C" failed: condition "bad": ReferenceError: nope is not defined');
  });
});

describe('error edges', () => {
  const def = workflow(
    [
      start(),
      { ...fn('score', "throw new Error('bad input')"), name: 'Score' },
      fn('ok', "return 'ok'"),
      fn('handler', "return 'handled: ' + <score.error>"),
    ],
    [{ from: 'start', to: 'score' }, { from: 'score', to: 'ok' }, { from: 'score', to: 'handler', on: 'error' }],
  );

  it('routes the error output to the error edge and deactivates normal edges', async () => {
    const steps: StepRecord[] = [];
    const r = await runWorkflow(compile(def), { input: {}, ports: ports(), onStep: async (s) => { steps.push(s); } });
    expect(r.status).toBe('completed');
    expect(r.output).toBe('handled: bad input');
    expect(r.trace.map((t) => [t.blockId, t.status])).toEqual([['start', 'success'], ['score', 'error'], ['handler', 'success']]);
    expect(steps.find((s) => s.blockId === 'score')).toEqual({ key: 'score', blockId: 'score', output: { error: 'bad input' }, error: 'bad input' });
  });

  it('a successful block skips its error edge', async () => {
    const d = structuredClone(def);
    d.blocks[1] = { ...fn('score', 'return 5'), name: 'Score' };
    const r = await run(d);
    expect(r.output).toBe('ok');
    expect(r.trace.map((t) => t.blockId)).toEqual(['start', 'score', 'ok']);
  });

  it('lets in-flight blocks finish and starts nothing new after a failure', async () => {
    const d = workflow(
      [start(), fn('fail', "throw new Error('x')"), fn('slow', 'let t = Date.now(); while (Date.now() - t < 100) {} return 1'), fn('after', 'return 2')],
      [{ from: 'start', to: 'fail' }, { from: 'start', to: 'slow' }, { from: 'slow', to: 'after' }],
    );
    const r = await run(d);
    expect(r.status).toBe('failed');
    expect(r.error?.blockId).toBe('fail');
    expect(r.trace.map((t) => t.blockId).sort()).toEqual(['fail', 'slow', 'start']);
  });
});

describe('retries', () => {
  let server: TestServer;
  let flakyCalls = 0;
  let active = 0;
  let peak = 0;
  let releaseAt = 1;
  let arrived = 0;
  const held: (() => void)[] = [];
  beforeAll(async () => {
    server = await startServer({
      '/flaky': (_req, _body, res) => {
        flakyCalls++;
        if (flakyCalls < 3) json(res, 503, { error: `down ${flakyCalls}` });
        else json(res, 200, { up: true });
      },
      '/down': (_req, _body, res) => json(res, 500, { error: 'always down' }),
      // Held until `releaseAt` requests are open at once, so the peak does not depend on timing.
      '/slow': (_req, _body, res) => {
        active++;
        peak = Math.max(peak, active);
        held.push(() => {
          active--;
          json(res, 200, { ok: true });
        });
        arrived++;
        if (held.length >= releaseAt || arrived % 8 === 0) for (const release of held.splice(0)) release();
      },
    });
  });
  afterAll(() => server.close());

  it('retries a failing block with backoff until it succeeds', async () => {
    const d = workflow(
      [start(), { id: 'h', type: 'http', name: 'H', config: { url: `${server.url}/flaky` }, retry: { maxAttempts: 3, backoffMs: 5 } }],
      chain('start', 'h'),
    );
    const r = await run(d);
    expect(r.status).toBe('completed');
    expect(server.hits.get('/flaky')).toBe(3);
    expect(r.trace[1]).toMatchObject({ blockId: 'h', status: 'success', attempts: 3, output: { status: 200, data: { up: true } } });
  });

  it('gives up after maxAttempts and reports the last error', async () => {
    const d = workflow([start(), { id: 'h', type: 'http', name: 'H', config: { url: `${server.url}/down` }, retry: { maxAttempts: 2, backoffMs: 0 } }], chain('start', 'h'));
    const r = await run(d);
    expect(r.status).toBe('failed');
    expect(server.hits.get('/down')).toBe(2);
    expect(r.error?.message).toMatch(/^Block "H" failed: HTTP 500 /);
    expect(r.trace[1].attempts).toBe(2);
  });

  it('runs independent blocks concurrently up to maxConcurrency', async () => {
    const blocks = [start(), ...Array.from({ length: 8 }, (_, i) => ({ id: `h${i}`, type: 'http', name: `H${i}`, config: { url: `${server.url}/slow` } }))];
    const edges = blocks.slice(1).map((b) => ({ from: 'start', to: b.id }));
    const g = compile(workflow(blocks, edges));
    // 8 calls with a cap of 3: released in groups of 3 (the last 2 when the eighth arrives).
    releaseAt = 3;
    await runWorkflow(g, { input: {}, ports: ports(), maxConcurrency: 3 });
    expect(peak).toBe(3);
    // Without a cap all 8 are open at once: each is held until the eighth arrives.
    peak = 0;
    releaseAt = 8;
    await runWorkflow(g, { input: {}, ports: ports() });
    expect(peak).toBe(8);
  });
});

describe('response block', () => {
  it('sets the response and ends the run; nothing new starts after it', async () => {
    const d = workflow(
      [
        start([{ name: 'name', type: 'string' }]),
        { id: 'resp', type: 'response', name: 'Resp', config: { data: { hello: '<start.name>', n: 1 }, status: 201, headers: { 'x-a': 'b' } } },
        fn('after', 'return 1'),
      ],
      chain('start', 'resp', 'after'),
    );
    const r = await run(d, { input: { name: 'Ada' } });
    expect(r.status).toBe('completed');
    expect(r.response).toEqual({ data: { hello: 'Ada', n: 1 }, status: 201, headers: { 'x-a': 'b' } });
    expect(r.output).toEqual({ data: { hello: 'Ada', n: 1 }, status: 201, headers: { 'x-a': 'b' } });
    expect(r.trace.map((t) => t.blockId)).toEqual(['start', 'resp']);
  });

  it('does not wait for a slow parallel branch', async () => {
    const d = workflow(
      [start(), { id: 'w', type: 'wait', name: 'W', config: { seconds: 300 } }, fn('never', 'return 1'), { id: 'resp', type: 'response', name: 'Resp', config: { data: 'fast' } }],
      [{ from: 'start', to: 'w' }, { from: 'w', to: 'never' }, { from: 'start', to: 'resp' }],
    );
    // The other branch waits five minutes, past the test's timeout: the run can only have answered by not waiting for it.
    const r = await run(d);
    expect(r.response?.data).toBe('fast');
    expect(r.trace.map((t) => t.blockId)).toEqual(['start', 'resp']);
  });
});

describe('run output', () => {
  it('is the output of the executed leaf that comes last in definition order', async () => {
    const d = workflow(
      [start(), fn('a', "let t = Date.now(); while (Date.now() - t < 30) {} return 'a'"), fn('b', "return 'b'")],
      [{ from: 'start', to: 'a' }, { from: 'start', to: 'b' }],
    );
    const r = await run(d);
    expect(r.output).toBe('b');
    const d2 = workflow([start(), fn('b', "return 'b'"), fn('a', "let t = Date.now(); while (Date.now() - t < 30) {} return 'a'")], [{ from: 'start', to: 'a' }, { from: 'start', to: 'b' }]);
    expect((await run(d2)).output).toBe('a');
  });

  it('ignores blocks not reachable from the start block', async () => {
    const d = workflow([start(), fn('a', "return 'a'"), fn('orphan', "return 'orphan'"), fn('join', 'return <a>')], [{ from: 'start', to: 'a' }, { from: 'a', to: 'join' }, { from: 'orphan', to: 'join' }]);
    const r = await run(d);
    expect(r.output).toBe('a');
    expect(r.trace.map((t) => t.blockId)).toEqual(['start', 'a', 'join']);
  });
});

describe('timeout and cancellation', () => {
  const def = workflow(
    // The wait is five minutes, past the test's timeout: a run that ends did so through the timeout or the signal.
    [start(), { id: 'w', type: 'wait', name: 'W', config: { seconds: 300 } }, fn('after', 'return 1')],
    chain('start', 'w', 'after'),
  );

  it('times out with status timed_out', async () => {
    const r = await run(def, { timeoutMs: 100 });
    expect(r.status).toBe('timed_out');
    expect(r.error?.message).toBe('Run timed out after 100 ms');
  });

  it('is cancelled through the signal, which reaches the running block', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const r = await run(def, { signal: ac.signal });
    expect(r.status).toBe('cancelled');
    expect(r.trace.map((t) => t.blockId)).toEqual(['start']);
  });

  it('stops a long-running function through the timeout', async () => {
    const d = workflow([start(), fn('spin', 'while (true) {}')], chain('start', 'spin'));
    const r = await run(d, { timeoutMs: 200 });
    expect(r.status, r.error?.message).toBe('timed_out');
  });

  it("is timed out, not failed, when a block whose time the run capped fails before the run's timer fires", async () => {
    // The sandbox's own timeout is the run's remaining time, so the two can end together: here the sandbox holds
    // the thread past the deadline and then fails at once, ahead of the run's timer (a loaded machine did this).
    const lateSandbox: SandboxPort = {
      run: async (req) => {
        const until = Date.now() + req.timeoutMs + 50;
        while (Date.now() < until) { /* the isolate's loop, past its time */ }
        throw new Error('Script execution timed out.');
      },
    };
    const d = workflow([start(), fn('spin', 'while (true) {}')], chain('start', 'spin'));
    const r = await runWorkflow(compile(d), { input: {}, ports: ports({ sandbox: lateSandbox }), timeoutMs: 100 });
    expect(r.status, r.error?.message).toBe('timed_out');
    expect(r.error?.message).toBe('Run timed out after 100 ms');
  });

  it('an already aborted signal cancels before anything runs', async () => {
    const ac = new AbortController();
    ac.abort();
    const r = await run(def, { signal: ac.signal });
    expect(r.status).toBe('cancelled');
    expect(r.trace).toEqual([]);
  });
});

describe('wait and variables blocks', () => {
  it('wait sleeps through the clock port', async () => {
    const slept: number[] = [];
    const clock = { now: () => Date.now(), sleep: async (ms: number) => { slept.push(ms); } };
    const d = workflow([start(), { id: 'w', type: 'wait', name: 'W', config: { seconds: 1.5 } }], chain('start', 'w'));
    const r = await runWorkflow(compile(d), { input: {}, ports: ports({ clock }) });
    expect(slept).toEqual([1500]);
    expect(r.output).toEqual({ waitedMs: 1500 });
  });

  it('variables assignments are visible to later blocks and returned', async () => {
    const d = workflow(
      [
        start([{ name: 'x', type: 'number' }]),
        { id: 'set', type: 'variables', name: 'Set', config: { assignments: { total: '<start.x>', label: 'n=<start.x>' } } },
        fn('use', 'return [<variable.total> + 1, <variable.label>, <variable.threshold>]'),
      ],
      chain('start', 'set', 'use'),
      { variables: { threshold: 0.5, total: 0 } },
    );
    const steps: StepRecord[] = [];
    const r = await runWorkflow(compile(d), { input: { x: 41 }, ports: ports(), variables: { threshold: 0.9 }, onStep: async (s) => { steps.push(s); } });
    expect(r.output).toEqual([42, 'n=41', 0.9]);
    expect(r.variables).toEqual({ threshold: 0.9, total: 41, label: 'n=41' });
    expect(steps.find((s) => s.blockId === 'set')?.variables).toEqual({ threshold: 0.9, total: 41, label: 'n=41' });
  });
});

describe('sandbox context per run (opt-in)', () => {
  it.each(['fresh', 'workspace'] as const)('fresh contexts: blocks of one run share globals; runs never do; reused contexts: no call sees another\'s (%s)', async (contexts) => {
    const { IsolatedVmSandbox } = await import('../../src/sandbox/isolated-vm.js');
    const perRun = new IsolatedVmSandbox({ contextPerRun: true, contexts, poolSize: 1 });
    try {
      const g = compile(workflow([start(), fn('a', 'globalThis.n = (globalThis.n || 0) + 1; return n'), fn('b', "return typeof n === 'number' ? n : 'none'")], chain('start', 'a', 'b')));
      const r1 = await runWorkflow(g, { input: {}, ports: ports({ sandbox: perRun }) });
      await perRun.parked();
      const r2 = await runWorkflow(g, { input: {}, ports: ports({ sandbox: perRun }) });
      await perRun.parked();
      const r3 = await runWorkflow(g, { input: {}, ports: ports({ sandbox: perRun }) });
      const expected = contexts === 'fresh' ? 1 : 'none';
      expect([r1.output, r2.output, r3.output]).toEqual([expected, expected, expected]);
      // With one isolate, later calls took a context an earlier one left.
      expect(perRun.contextStats.reused > 0).toBe(contexts === 'workspace');
    } finally {
      perRun.dispose();
    }
  });
});
