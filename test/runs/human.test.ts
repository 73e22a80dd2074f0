import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

const human = (id: string, name: string, extra: Record<string, unknown> = {}) => ({
  id, type: 'human', name,
  config: { message: `Approve ${name}?`, fields: [{ name: 'decision', type: 'string', required: true }, { name: 'amount', type: 'number' }], ...extra },
});

const approval = {
  blocks: [
    start([{ name: 'item', type: 'string' }]),
    human('approval', 'Approval'),
    fn('after', 'return { item: <start.item>, decision: <approval.decision>, amount: <approval.amount> }', 'After'),
  ],
  edges: [{ from: 'start', to: 'approval' }, { from: 'approval', to: 'after' }],
};

const resume = (wf: string, exec: string, ctx: string, body: unknown) => t.call('POST', `/api/resume/${wf}/${exec}/${encodeURIComponent(ctx)}`, body);

describe('human in the loop', () => {
  it('pauses a sync run, exposes the exact record, validates the form and resumes once', async () => {
    const wf = await deploy(t, 'approve-sync', approval);
    const run = await t.call('POST', `/api/workflows/${wf}/execute`, { item: 'laptop' });
    expect(run.status).toBe(200);
    expect(run.body.success).toBe(true);
    const exec = run.body.executionId;
    const links = run.body.output.data._resume;
    expect(links).toEqual({
      apiUrl: `${t.url}/api/resume/${wf}/${exec}/approval`, uiUrl: `${t.url}/resume/${wf}/${exec}`,
      contextId: 'approval', executionId: exec, workflowId: wf,
    });
    expect(run.body.output.data.message).toBe('Approve Approval?');

    const rec = await t.call('GET', `/api/resume/${wf}/${exec}`);
    expect(rec.status).toBe(200);
    expect(Object.keys(rec.body).sort()).toEqual(['executionId', 'executionSnapshot', 'expiresAt', 'id', 'metadata', 'pausePoints', 'pausedAt',
      'queue', 'resumedCount', 'status', 'totalPauseCount', 'triggerIds', 'updatedAt', 'workflowId'].sort());
    expect(rec.body).toMatchObject({ workflowId: wf, executionId: exec, status: 'paused', totalPauseCount: 1, resumedCount: 0, triggerIds: [], queue: [] });
    expect(typeof rec.body.executionSnapshot.snapshot).toBe('string');
    expect(Array.isArray(rec.body.executionSnapshot.triggerIds)).toBe(true);
    expect(Date.parse(rec.body.pausedAt)).toBeGreaterThan(0);
    const point = rec.body.pausePoints[0];
    expect(point).toMatchObject({ contextId: 'approval', blockId: 'approval', resumeStatus: 'paused', snapshotReady: true, resumeLinks: links, queuePosition: null, latestResumeEntry: null });
    expect(Date.parse(point.registeredAt)).toBeGreaterThan(0);
    // The point's response is the block's answer as the reference shapes it (its form in data), as in the run's output.
    expect(point.pauseKind).toBe('human');
    expect(point.response).toEqual(run.body.output);
    expect(point.response.data).toMatchObject({ operation: 'human', message: 'Approve Approval?', _resume: links });
    const one = await t.call('GET', `/api/resume/${wf}/${exec}/approval`);
    expect(one.body.pausePoint.contextId).toBe('approval');
    expect(one.body.pausePoint.response.data.fields).toHaveLength(2);
    expect(one.body.execution.pausePoints[0].response).toMatchObject({ data: {}, status: 200 });

    const invalid = await resume(wf, exec, 'approval', { input: { amount: 'lots' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.details.map((d: { path: string[] }) => d.path.join('.')).sort()).toEqual(['input.amount', 'input.decision']);

    const ok = await resume(wf, exec, 'approval', { input: { decision: 'yes', amount: '12' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ success: true, status: 'completed', output: { item: 'laptop', decision: 'yes', amount: 12 } });
    expect(ok.body.executionId).not.toBe(exec);
    expect((await resume(wf, exec, 'approval', { input: { decision: 'again' } })).status).toBe(409);
    const after = await t.call('GET', `/api/resume/${wf}/${exec}`);
    expect(after.body).toMatchObject({ status: 'fully_resumed', resumedCount: 1 });
    expect(after.body.queue).toHaveLength(1);
    expect(after.body.pausePoints[0].latestResumeEntry).toMatchObject({ status: 'completed', contextId: 'approval', parentExecutionId: exec, resumeInput: { decision: 'yes', amount: 12 } });
    const log = await t.call('GET', `/api/v1/logs/${exec}`);
    expect(log.body.data.status).toBe('completed');
  });

  it('pauses and resumes an async run through jobs', async () => {
    const wf = await deploy(t, 'approve-async', approval);
    const q = await t.call('POST', `/api/workflows/${wf}/execute`, { item: 'desk', async: true });
    let job: any;
    for (let i = 0; i < 100; i++) {
      job = (await t.call('GET', `/api/jobs/${q.body.jobId}`)).body;
      if (job.paused) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(job.paused).toBe(true);
    expect(job.pause.data._resume.contextId).toBe('approval');
    const r = await resume(q.body.executionId === undefined ? '' : wf, q.body.executionId, 'approval', { input: { decision: 'ok' } });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ success: true, async: true, message: 'Resume execution queued' });
    const done = await waitForJob(t, r.body.jobId);
    expect(done.status).toBe('completed');
    expect(done.output.output).toEqual({ item: 'desk', decision: 'ok', amount: null });
  });

  it('keeps two pauses in parallel branches independent, resumed in either order', async () => {
    const wf = await deploy(t, 'two-branches', {
      blocks: [
        start(),
        { id: 'fan', type: 'parallel', name: 'Fan', config: { kind: 'count', count: 2 }, blocks: [human('gate', 'Gate')] },
        fn('sum', 'return <fan.results>.map((r) => r.decision)', 'Sum'),
      ],
      edges: [{ from: 'start', to: 'fan' }, { from: 'fan', to: 'sum' }],
    });
    for (const order of [[1, 0], [0, 1]]) {
      const run = await t.call('POST', `/api/workflows/${wf}/execute`, {});
      expect(run.body.output.pauseCount).toBe(2);
      const exec = run.body.executionId;
      const rec = (await t.call('GET', `/api/resume/${wf}/${exec}`)).body;
      const points = rec.pausePoints.sort((a: any, b: any) => a.parallelScope.branchIndex - b.parallelScope.branchIndex);
      expect(points.map((p: any) => p.parallelScope)).toEqual([
        { parallelId: 'fan', branchIndex: 0, branchTotal: 2 }, { parallelId: 'fan', branchIndex: 1, branchTotal: 2 },
      ]);
      expect(new Set(points.map((p: any) => p.contextId)).size).toBe(2);
      const first = await resume(wf, exec, points[order[0]].contextId, { input: { decision: `d${order[0]}` } });
      expect(first.body.status).toBe('paused');
      const mid = (await t.call('GET', `/api/resume/${wf}/${exec}`)).body;
      expect(mid).toMatchObject({ status: 'partially_resumed', resumedCount: 1, totalPauseCount: 2 });
      const second = await resume(wf, exec, points[order[1]].contextId, { input: { decision: `d${order[1]}` } });
      expect(second.body.status).toBe('completed');
      expect(second.body.output).toEqual(['d0', 'd1']);
    }
  });

  it('pauses inside loop iterations with their own context ids', async () => {
    const wf = await deploy(t, 'loop-pause', {
      blocks: [
        start(),
        { id: 'each', type: 'loop', name: 'Each', config: { kind: 'for', count: 2 }, blocks: [human('check', 'Check')] },
        fn('done', 'return <each.results>.map((r) => r.decision)', 'Done'),
      ],
      edges: [{ from: 'start', to: 'each' }, { from: 'each', to: 'done' }],
    });
    const run = await t.call('POST', `/api/workflows/${wf}/execute`, {});
    const exec = run.body.executionId;
    const p0 = (await t.call('GET', `/api/resume/${wf}/${exec}`)).body.pausePoints[0];
    expect(p0.loopScope).toEqual({ loopId: 'each', iteration: 0 });
    const r0 = await resume(wf, exec, p0.contextId, { input: { decision: 'first' } });
    expect(r0.body.status).toBe('paused');
    const rec = (await t.call('GET', `/api/resume/${wf}/${exec}`)).body;
    const p1 = rec.pausePoints.find((p: any) => p.resumeStatus === 'paused');
    expect(p1.loopScope).toEqual({ loopId: 'each', iteration: 1 });
    expect(p1.contextId).not.toBe(p0.contextId);
    const r1 = await resume(wf, exec, p1.contextId, { input: { decision: 'second' } });
    expect(r1.body).toMatchObject({ status: 'completed', output: ['first', 'second'] });
  });

  it('lets exactly one of several concurrent resumes of a point win, and queues resumes of other points', async () => {
    const wf = await deploy(t, 'race', approval);
    const exec = (await t.call('POST', `/api/workflows/${wf}/execute`, { item: 'x' })).body.executionId;
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => resume(wf, exec, 'approval', { input: { decision: `d${i}` } })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(4);

    const two = await deploy(t, 'queued', {
      blocks: [start(), human('a', 'A'), { id: 'slow', type: 'wait', name: 'Slow', config: { seconds: 1 } }, human('b', 'B'),
        fn('join', 'return [<a.decision>, <b.decision>]', 'Join')],
      edges: [{ from: 'start', to: 'a' }, { from: 'start', to: 'b' }, { from: 'a', to: 'slow' }, { from: 'slow', to: 'join' }, { from: 'b', to: 'join' }],
    });
    const ex2 = (await t.call('POST', `/api/workflows/${two}/execute`, {})).body.executionId;
    // The resume of A runs for a second (its wait block): the resume of B arriving meanwhile queues behind it.
    const ra = resume(two, ex2, 'a', { input: { decision: 'A' } });
    await new Promise((r) => setTimeout(r, 200));
    const rb = await resume(two, ex2, 'b', { input: { decision: 'B' } });
    await ra;
    expect(rb.body).toMatchObject({ status: 'queued', queuePosition: 1 });
    let rec: any;
    for (let i = 0; i < 100; i++) {
      rec = (await t.call('GET', `/api/resume/${two}/${ex2}`)).body;
      if (rec.status === 'fully_resumed') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(rec.status).toBe('fully_resumed');
    expect((await t.call('GET', `/api/v1/logs/${ex2}`)).body.data.output).toEqual(['A', 'B']);
  });

  it('approves with defaults when a pause times out', async () => {
    const wf = await deploy(t, 'timeout', {
      blocks: [start(), { id: 'gate', type: 'human', name: 'Gate', config: { fields: [{ name: 'ok', type: 'boolean', required: true }], timeoutSeconds: 1, onTimeout: 'approve' } },
        fn('after', 'return { ok: <gate.ok>, timedOut: <gate.timedOut> }', 'After')],
      edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'after' }],
    });
    const exec = (await t.call('POST', `/api/workflows/${wf}/execute`, {})).body.executionId;
    let log: any;
    for (let i = 0; i < 100; i++) {
      log = (await t.call('GET', `/api/v1/logs/${exec}`)).body.data;
      if (log.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(log.status).toBe('completed');
    expect(log.output).toEqual({ ok: true, timedOut: true });
  });

  it('answers unknown ids with 404 and serves a resume page', async () => {
    const wf = await deploy(t, 'unknowns', approval);
    expect((await t.call('GET', `/api/resume/${wf}/nope`)).status).toBe(404);
    expect((await resume(wf, 'nope', 'approval', { input: {} })).status).toBe(404);
    const exec = (await t.call('POST', `/api/workflows/${wf}/execute`, {})).body.executionId;
    expect((await resume(wf, exec, 'ghost', { input: {} })).status).toBe(404);
    const page = await request(`${t.url}/resume/${wf}/${exec}`, 'GET');
    expect(page.status).toBe(200);
    expect(page.text).toContain('name="apiKey"');
    const form = await fetch(`${t.url}/resume/${wf}/${exec}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ apiKey: t.apiKey }) });
    const html = await form.text();
    expect(html).toContain('name="decision"');
    expect(html).toContain('Approve Approval?');
    const submit = await fetch(`${t.url}/resume/${wf}/${exec}/approval`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ apiKey: t.apiKey, decision: 'via page' }) });
    expect(submit.status).toBe(200);
    expect(await submit.text()).toContain('completed');
    const badKey = await fetch(`${t.url}/resume/${wf}/${exec}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ apiKey: 'sk-weft-wrong' }) });
    expect(badKey.status).toBe(401);
  });
});

describe('resume after a restart', () => {
  it('resumes a run paused before the server restarted', async () => {
    const where = await (await import('../support/harness.js')).freshDatabase();
    let s = await startTestServer({ reuse: where, env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
    const wf = await deploy(s, 'restart', approval);
    const exec = (await s.call('POST', `/api/workflows/${wf}/execute`, { item: 'chair' })).body.executionId;
    await s.close();
    s = await startTestServer({ reuse: where });
    try {
      const r = await s.call('POST', `/api/resume/${wf}/${exec}/approval`, { input: { decision: 'later' } });
      expect(r.status).toBe(200);
      expect(r.body.output).toMatchObject({ item: 'chair', decision: 'later' });
    } finally {
      await s.close();
    }
  });

  it('fires a pause timeout that fell due while the server was down', async () => {
    const where = await (await import('../support/harness.js')).freshDatabase();
    let s = await startTestServer({ reuse: where, env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
    const wf = await deploy(s, 'timeout-restart', {
      blocks: [start(), { id: 'gate', type: 'human', name: 'Gate', config: { fields: [], timeoutSeconds: 1, onTimeout: 'fail' } }, fn('after', 'return 1', 'After')],
      edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'after' }],
    });
    const exec = (await s.call('POST', `/api/workflows/${wf}/execute`, {})).body.executionId;
    await s.close();
    await new Promise((r) => setTimeout(r, 1500));
    s = await startTestServer({ reuse: where });
    try {
      let log: any;
      for (let i = 0; i < 50; i++) {
        log = (await s.call('GET', `/api/v1/logs/${exec}`)).body.data;
        if (log.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(log.status).toBe('failed');
      expect(log.error).toMatch(/timed out/);
      expect((await s.call('GET', `/api/resume/${wf}/${exec}`)).body.status).toBe('failed');
    } finally {
      await s.close();
    }
  });
});
