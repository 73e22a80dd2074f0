// One run cannot freeze the server, and a server killed during a runaway run comes back (security finding, critical 2).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrappedDatabase, request, startTestServer, type TestServer } from '../support/harness.js';
import { freePort, spawnServer } from '../support/cli.js';
import { deploy } from '../support/workflows.js';
import { createKey, createWorkspace } from '../support/accounts.js';

/** A loop of 1,000 around a loop of 1,000 around a variables block: a million block executions unless stopped. */
const nestedLoops = (levels: number) => {
  let inner: Record<string, unknown> = { id: 'set', type: 'variables', name: 'Set', config: { assignments: { seen: 1 } } };
  for (let i = levels; i >= 1; i--) inner = { id: `loop${i}`, type: 'loop', name: `Loop${i}`, config: { kind: 'for', count: 1000 }, blocks: [inner] };
  return {
    blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, inner],
    edges: [{ from: 'start', to: 'loop1' }],
  };
};

/**
 * Polls /healthz one request after another while `work` runs; returns how many answers came back before
 * it ended. A run that held the event loop would let at most one through.
 */
async function healthAnswersDuring(url: string, work: Promise<unknown>): Promise<number> {
  let done = false;
  void work.finally(() => (done = true));
  let answered = 0;
  while (!done) {
    const r = await fetch(`${url}/healthz`);
    expect(r.status).toBe(200);
    if (!done) answered++;
    await new Promise((res) => setTimeout(res, 20));
  }
  return answered;
}

describe('a runaway run', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('fails with the step budget error naming the limit and the block, while /healthz keeps answering', async () => {
    const id = await deploy(t, 'runaway-sync', nestedLoops(2));
    const run = t.call('POST', `/api/workflows/${id}/execute`, {});
    const answered = await healthAnswersDuring(t.url, run);
    const r = await run;
    expect(r.status).toBe(500);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toMatch(/Step budget exceeded/);
    expect(r.body.error).toMatch(/100000/);
    expect(r.body.error).toMatch(/"Set"|"Loop2"|"Loop1"/);
    expect(answered).toBeGreaterThanOrEqual(3);
    // The failed run has its log row, with a bounded trace.
    const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
    expect(log.status).toBe(200);
    expect(log.body.data.status).toBe('failed');
    expect(log.body.data.trace.length).toBeLessThanOrEqual(2_001);
  }, 120_000);

  it('returns no more than the result cap: a huge function output fails the block', async () => {
    const id = await deploy(t, 'huge-output', {
      blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'big', type: 'function', name: 'Big', config: { code: "return 'x'.repeat(30_000_000)" } }],
      edges: [{ from: 'start', to: 'big' }],
    });
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.status).toBe(500);
    expect(r.text.length).toBeLessThan(100_000);
    expect(r.body.error).toMatch(/limit/i);
    const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
    expect(log.text.length).toBeLessThan(5 * 1024 * 1024);
  }, 60_000);

  // A thrown message was kept whole: 20 MB of it made each answer, each log list entry and the log (twice, with
  // its trace) that large, so a page of such runs would have been gigabytes built on the event loop.
  it('keeps the first 8,000 characters of a huge error message in the answer, the log list and the log', async () => {
    const id = await deploy(t, 'huge-error', {
      blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'boom', type: 'function', name: 'Boom', config: { code: "throw new Error('y'.repeat(2_000_000))" } }],
      edges: [{ from: 'start', to: 'boom' }],
    });
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.status).toBe(500);
    expect(r.body.error).toMatch(/^Block "Boom" failed: (Error: )?y{7000,8000}… \(\d+ more characters\)$/);
    expect(r.text.length).toBeLessThan(20_000);
    const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
    expect(log.status).toBe(200);
    expect(log.body.data.error).toBe(r.body.error);
    expect(log.text.length).toBeLessThan(40_000);
    const list = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}`);
    expect(list.body.data[0].error).toBe(r.body.error);
    expect(list.text.length).toBeLessThan(20_000);
  }, 60_000);
});

describe('code that exhausts its sandbox memory in a way the isolate cannot catch', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The test server as seen by a new workspace of its own, with its own key. */
  async function newWorkspace(): Promise<TestServer> {
    const ws = await createWorkspace(t.server.ctx.db, `ws-${randomUUID().slice(0, 8)}`, t.userId, 'enterprise');
    const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
    return { ...t, workspaceId: ws.id, apiKey: key.secret, call: (method, path, body, headers = {}) => request(t.url + path, method, body, { 'x-api-key': key.secret, ...headers }) };
  }
  // Bombs get the longest time a block may have: on a busy host, filling 128 MB can take longer than the default 10 s.
  const oneFunction = (code: string, timeoutMs?: number) => ({
    blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'f', type: 'function', name: 'F', config: { code, ...(timeoutMs ? { timeoutMs } : {}) } }],
    edges: [{ from: 'start', to: 'f' }],
  });
  const mapBomb = 'const m = new Map(); for (let i = 0; ; i++) m.set(i, i);';
  // A callback: outside pure code, so it needs an isolate.
  const needsIsolate = 'return [2].map((x) => x * 21)[0]';

  // Growing a Map, an object's properties or a huge array past the isolate's limit ends in a V8 fatal
  // out-of-memory error that aborts the process the isolate lives in (isolated-vm cannot stop it). That
  // process is the sandbox's own, not the server (src/sandbox/process-sandbox.ts). Each case in a workspace
  // of its own: two such crashes pause a workspace's code (the next test).
  it.each([
    ['a Map', mapBomb],
    ["an object's properties", 'const o = {}; for (let i = 0; ; i++) o["k" + i] = i;'],
    ['a huge array', 'return new Array(4e7).fill(0).length'],
  ])('fails the run when it grows %s, and the server and the next run go on', async (_what, code) => {
    const w = await newWorkspace();
    const id = await deploy(w, 'bomb', oneFunction(code, 60_000));
    const r = await w.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.status).toBe(500);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toMatch(/memory/);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    const next = await deploy(w, 'after-bomb', oneFunction(needsIsolate));
    const ok = await w.call('POST', `/api/workflows/${next}/execute`, {});
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.output).toBe(42);
  }, 60_000);

  // The sandbox process hands a result to the server over its IPC channel. Sent as a structured clone, a value
  // nested about 2,000 deep overflowed the stack of Node's deserializer in the server's channel callback: an
  // uncaught error that ended the server (and, for an async run, again at every restart's recovery).
  it('fails a run whose code returns a value nested thousands deep, and the server and the next run go on', async () => {
    const w = await newWorkspace();
    const nested = (depth: number) => `let v = 1; for (let i = 0; i < ${depth}; i++) v = { a: v }; return [v].map((x) => x)[0];`;
    const deep = await deploy(w, 'deep', oneFunction(nested(3_000)));
    const r = await w.call('POST', `/api/workflows/${deep}/execute`, {});
    expect(r.status, r.text).toBe(500);
    expect(r.body.error).toMatch(/nested more than 1000 levels deep/);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    // Within the bound, a nested value comes back whole.
    const deepest = await deploy(w, 'deepest', oneFunction(nested(900)));
    const ok = await w.call('POST', `/api/workflows/${deepest}/execute`, {});
    expect(ok.status, ok.text).toBe(200);
    let depth = 0;
    for (let v = ok.body.output; typeof v === 'object' && v !== null; v = v.a) depth++;
    expect(depth).toBe(900);
  }, 60_000);

  it("pauses a workspace's code that needs an isolate once it has stopped the sandbox process twice; other workspaces and its pure code go on", async () => {
    const hostile = await newWorkspace();
    const other = await newWorkspace();
    const bomb = await deploy(hostile, 'bomb', oneFunction(mapBomb, 60_000));
    const isolated = await deploy(hostile, 'isolated', oneFunction(needsIsolate));
    const pure = await deploy(hostile, 'pure', oneFunction('return 6 * 7'));
    const othersCode = await deploy(other, 'others', oneFunction(needsIsolate));
    // Most such bombs end the process; now and then V8 stops one inside its isolate instead (a memory error
    // the run reports, no crash, nothing charged to the budget): bomb until two have ended the process.
    let stopped = 0;
    for (let i = 0; i < 10 && stopped < 2; i++) {
      const r = await hostile.call('POST', `/api/workflows/${bomb}/execute`, {});
      expect(r.status).toBe(500);
      expect(r.body.error).toMatch(/memory/);
      if (/sandbox process stopped/.test(r.body.error)) stopped++;
    }
    expect(stopped).toBe(2);
    // Paused: refused at once, saying why and for how long, without starting a process to crash.
    const stops = () => t.call('GET', '/metrics').then((m) => Number(/^weft_sandbox_process_stops_total (\d+)/m.exec(m.text)?.[1]));
    const stopsBefore = await stops();
    for (const id of [bomb, isolated]) {
      const refused = await hostile.call('POST', `/api/workflows/${id}/execute`, {});
      expect(refused.status).toBe(500);
      expect(refused.body.error).toMatch(/refused in this workspace for \d+ s more: its code stopped the sandbox process 2 times/);
    }
    expect(await stops()).toBe(stopsBefore);
    const metrics = (await t.call('GET', '/metrics')).text;
    expect(metrics).toMatch(/^weft_sandbox_refused_calls_total [1-9]/m);
    expect(metrics).toMatch(/^weft_sandbox_charged_stops_total [2-9]/m);
    // Pure code never reaches the sandbox process; another workspace's code still gets its isolate.
    const pureRun = await hostile.call('POST', `/api/workflows/${pure}/execute`, {});
    expect(pureRun.status, pureRun.text).toBe(200);
    expect(pureRun.body.output).toBe(42);
    const othersRun = await other.call('POST', `/api/workflows/${othersCode}/execute`, {});
    expect(othersRun.status, othersRun.text).toBe(200);
    expect(othersRun.body.output).toBe(42);
  }, 120_000);
});

describe('a server killed during a runaway async run', () => {
  it('listens again within 30 s and ends that job as failed', async () => {
    const { workspaceId, apiKey, env } = await bootstrappedDatabase();
    const boot = { workspaceId };
    const headers = { 'x-api-key': apiKey };
    const base = { ...env, WEFT_JOB_LEASE_MS: '2000' };

    // The first server lets a run go on far beyond the default budget: three nested loops of 1,000.
    let server = await spawnServer({ ...base, WEFT_MAX_RUN_STEPS: '100000000' }, await freePort());
    let jobId: string;
    try {
      const created = await request(`${server.url}/api/v1/workflows`, 'POST', { workspaceId: boot.workspaceId, name: 'runaway-async', definition: nestedLoops(3) }, headers);
      expect(created.status).toBe(201);
      const wf = created.body.data.workflow.id;
      expect((await request(`${server.url}/api/v1/workflows/${wf}/deploy`, 'POST', undefined, headers)).status).toBe(200);
      const queued = await request(`${server.url}/api/workflows/${wf}/execute`, 'POST', { async: true }, headers);
      expect(queued.status).toBe(202);
      jobId = queued.body.jobId;
      // Wait until it runs, and check the server still answers meanwhile.
      const deadline = Date.now() + 20_000;
      let status = '';
      while (status !== 'processing' && Date.now() < deadline) {
        status = (await request(`${server.url}/api/jobs/${jobId}`, 'GET', undefined, headers)).body.status;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe('processing');
      await new Promise((r) => setTimeout(r, 500));
      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
    } finally {
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
    }

    // The next server listens first, then takes the job over in the background and ends it. (An async run
    // records every block durably, so its budget is spent at the database's pace: a smaller one keeps this short.)
    // spawnServer returns once /healthz answers: a server that ran the takeover before listening would
    // first spend the run's whole budget.
    server = await spawnServer({ ...base, WEFT_MAX_RUN_STEPS: '1000' }, await freePort());
    try {
      const deadline = Date.now() + 60_000;
      let job: { status: string; error?: string } = { status: '' };
      while (job.status !== 'failed' && job.status !== 'completed' && Date.now() < deadline) {
        job = (await request(`${server.url}/api/jobs/${jobId}`, 'GET', undefined, headers)).body;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(job.status).toBe('failed');
      expect(job.error).toMatch(/Step budget exceeded|Interrupted repeatedly/);
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.once('exit', r));
    }
  }, 180_000);
});
