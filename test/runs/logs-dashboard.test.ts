// What the dashboard's runs pages read from the logs API: each run's cost in the list and in one log,
// and the timeline of an async run while it still runs (the blocks it recorded so far).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('costUsd of logs', () => {
  it('is the base charge of each finished run, in the list and in one log; null while a run is not charged', async () => {
    const id = await deploy(t, 'cost-list', { blocks: [start(), fn('answer', 'return { ok: true }')], edges: [{ from: 'start', to: 'answer' }] });
    const runs = [];
    for (let i = 0; i < 3; i++) {
      const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
      expect(r.status).toBe(200);
      runs.push(r.body.executionId as string);
    }
    const list = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}&limit=2`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((r: { costUsd: unknown }) => r.costUsd)).toEqual([0.005, 0.005]);
    const rest = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}&limit=2&cursor=${encodeURIComponent(list.body.nextCursor)}`);
    expect(rest.body.data.map((r: { executionId: string; costUsd: unknown }) => [r.executionId, r.costUsd])).toEqual([[runs[0], 0.005]]);

    const one = await t.call('GET', `/api/v1/logs/${runs[1]}`);
    expect(one.status).toBe(200);
    expect(one.body.data.costUsd).toBe(0.005);
  });
});

describe('the timeline of a running async run', () => {
  it('lists the blocks recorded so far, shaped like a finished trace, and the finished trace once it ends', async () => {
    const id = await deploy(t, 'live-timeline', {
      blocks: [
        start(),
        fn('first', 'return { step: 1 }', 'First step'),
        { id: 'pause', type: 'wait', name: 'Long wait', config: { seconds: 60 } },
      ],
      edges: [{ from: 'start', to: 'first' }, { from: 'first', to: 'pause' }],
    });
    const queued = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    expect(queued.status).toBe(202);
    const executionId: string = queued.body.executionId;

    const live = await until('the first block in the live trace', async () => {
      const r = await t.call('GET', `/api/v1/logs/${executionId}`);
      expect(r.status).toBe(200);
      return r.body.data.trace.some((e: { blockId: string }) => e.blockId === 'first') ? r.body.data : undefined;
    });
    expect(live.status).toBe('processing');
    expect(live.endedAt).toBeNull();
    expect(live.costUsd).toBeNull();
    // The start block's record is held back (replay recomputes it) and goes in the statement that commits the
    // next block's: it is there, and first, though its id sorts after "first".
    expect(live.trace.map((e: { blockId: string }) => e.blockId)).toEqual(['start', 'first']);
    const first = live.trace.find((e: { blockId: string }) => e.blockId === 'first');
    expect(first).toMatchObject({ key: 'first', name: 'First step', type: 'function', status: 'success', output: { step: 1 } });
    expect(first.durationMs).toBeGreaterThanOrEqual(0);
    // Start times are estimates: never before the run started, in the order the blocks finished.
    const starts = live.trace.map((e: { startedAt: string }) => Date.parse(e.startedAt));
    expect(Math.min(...starts)).toBeGreaterThanOrEqual(Date.parse(live.startedAt));
    expect([...starts].sort((a, b) => a - b)).toEqual(starts);
    // The wait block has not finished: it is not in the trace yet.
    expect(live.trace.some((e: { blockId: string }) => e.blockId === 'pause')).toBe(false);

    const cancel = await t.call('POST', `/api/v2/workflows/${id}/runs/${executionId}/cancel`);
    expect(cancel.status).toBeLessThan(300);
    const ended = await until('the run to end', async () => {
      const r = await t.call('GET', `/api/v1/logs/${executionId}`);
      return r.body.data.status === 'cancelled' ? r.body.data : undefined;
    });
    // The trace written at the end: the waterfall's own entry for the stopped block.
    expect(ended.trace.find((e: { blockId: string }) => e.blockId === 'first')).toMatchObject({ name: 'First step', type: 'function' });
  });

  it('shows a block whose record was held back once the next block has run a moment', async () => {
    // start -> wait: the start block's record waits for a next record that does not come for a minute, so it is
    // sent alone after a moment (src/runs/step-recorder.ts).
    const id = await deploy(t, 'live-held', {
      blocks: [start(), { id: 'pause', type: 'wait', name: 'Wait', config: { seconds: 60 } }],
      edges: [{ from: 'start', to: 'pause' }],
    });
    const queued = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    const executionId: string = queued.body.executionId;
    const live = await until('the start block in the live trace', async () => {
      const r = await t.call('GET', `/api/v1/logs/${executionId}`);
      return r.body.data.trace.length > 0 ? r.body.data : undefined;
    });
    expect(live.status).toBe('processing');
    expect(live.trace.map((e: { blockId: string; status: string }) => [e.blockId, e.status])).toEqual([['start', 'success']]);
    await t.call('POST', `/api/v2/workflows/${id}/runs/${executionId}/cancel`);
  });

  it('is empty for a run that recorded nothing yet, and no other workspace reads it', async () => {
    const id = await deploy(t, 'live-empty', {
      blocks: [start(), { id: 'pause', type: 'wait', name: 'Wait', config: { seconds: 60 } }],
      edges: [{ from: 'start', to: 'pause' }],
    });
    const queued = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    const executionId: string = queued.body.executionId;
    const r = await t.call('GET', `/api/v1/logs/${executionId}`);
    expect(r.status).toBe(200);
    expect(['queued', 'processing']).toContain(r.body.data.status);
    // Only the start block can be there so far.
    expect(r.body.data.trace.every((e: { blockId: string }) => e.blockId === 'start')).toBe(true);
    const other = await createWorkspace(t.server.ctx.db, `other-${Date.now()}`, t.userId);
    const otherKey = (await createKey(t.server.ctx.db, { workspaceId: other.id, userId: t.userId, type: 'workspace' })).secret;
    expect((await t.call('GET', `/api/v1/logs/${executionId}`, undefined, { 'x-api-key': otherKey })).status).toBe(404);
    await t.call('POST', `/api/v2/workflows/${id}/runs/${executionId}/cancel`);
  });
});
