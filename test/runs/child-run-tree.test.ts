// Child workflows share their parent's budgets (security finding, high): a tree of workflow blocks, 20
// children each fanning out to 20 more, used to get a step budget, a concurrency and a time slice per child
// run, and held another workspace's request for 28 s.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { createKey, createWorkspace } from '../support/accounts.js';
import { deploy, start } from '../support/workflows.js';

/** A loop of `count` variables blocks (`count` + 2 steps of main-thread work), after a call to `ping` when given. */
const leaf = (count: number, ping?: string) => {
  const first = ping ? [{ id: 'ping', type: 'http', name: 'Ping', config: { url: ping } }] : [];
  const ids = ['start', ...first.map((b) => b.id), 'loop'];
  return {
    blocks: [start(), ...first, {
      id: 'loop', type: 'loop', name: 'Repeat', config: { kind: 'for', count },
      blocks: [{ id: 'set', type: 'variables', name: 'Set', config: { assignments: { seen: '<loop.index>' } } }],
    }],
    edges: ids.slice(1).map((to, i) => ({ from: ids[i], to })),
  };
};

/** `width` branches at once, each running workflow `childId`. */
const fanOut = (childId: string, width: number) => ({
  blocks: [start(), {
    id: 'fan', type: 'parallel', name: 'Fan', config: { kind: 'count', count: width },
    blocks: [{ id: 'child', type: 'workflow', name: 'Child', config: { workflowId: childId } }],
  }],
  edges: [{ from: 'start', to: 'fan' }],
});

describe('a tree of child workflows', () => {
  let t: TestServer;
  let upstream: http.Server;
  let upstreamUrl = '';
  let pings = 0;
  let onPing: (count: number) => void = () => undefined;

  beforeAll(async () => {
    // Each leaf of the busy tree calls /ping first: the test knows how far the tree has got. Connections are not
    // kept: the server closing an idle one while a run reuses it would fail a leaf.
    upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
      res.end('{}');
      onPing(++pings);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    // The default step budget (WEFT_MAX_RUN_STEPS, 100,000).
    t = await startTestServer({ env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true' } });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  it('fails with the step budget error when the whole tree passes it, though each run alone stays under it', async () => {
    // 400 leaves of 260 steps: more than 104,000 steps against the budget of 100,000; no run has more than 260.
    const leafId = await deploy(t, 'budget-leaf', leaf(258));
    const midId = await deploy(t, 'budget-mid', fanOut(leafId, 20));
    const rootId = await deploy(t, 'budget-root', fanOut(midId, 20));
    const r = await t.call('POST', `/api/workflows/${rootId}/execute`, {});
    expect(r.status, r.body?.error).toBe(500);
    expect(r.body.success).toBe(false);
    // The documented error (README, WEFT_MAX_RUN_STEPS), not "child workflow ... failed: ...".
    expect(r.body.error).toMatch(/^Step budget exceeded: the run executed 100000 blocks \(limit 100000\); stopped at block "(Set|Repeat|Start|Child|Fan)"$/);
    const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
    expect(log.body.data.status).toBe('failed');
  }, 120_000);

  it("lets another workspace's small sync run finish before a tree that was running first", async () => {
    const ws = await createWorkspace(t.server.ctx.db, `other-${randomUUID().slice(0, 8)}`, t.userId, 'enterprise');
    const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
    const other: TestServer = { ...t, workspaceId: ws.id, apiKey: key.secret, call: (m, p, b, h = {}) => request(t.url + p, m, b, { 'x-api-key': key.secret, ...h }) };
    const small = await deploy(other, 'small', { blocks: [start(), { id: 'v', type: 'variables', name: 'V', config: { assignments: { a: 1 } } }], edges: [{ from: 'start', to: 'v' }] });

    // 20 children each fanning out to 20 leaves of 153 steps: 61,662 steps, under the budget.
    const leafId = await deploy(t, 'busy-leaf', leaf(150, `${upstreamUrl}/ping`));
    const midId = await deploy(t, 'busy-mid', fanOut(leafId, 20));
    const rootId = await deploy(t, 'busy-root', fanOut(midId, 20));

    // The other request is made once every leaf has started. Each run of the tree used to take its own time
    // slice of every event-loop turn (and its own 32 blocks at once): the request was answered after the tree.
    const order: string[] = [];
    let otherRun: Promise<void> | undefined;
    pings = 0;
    onPing = (count) => {
      if (count !== 400) return;
      otherRun = other.call('POST', `/api/workflows/${small}/execute`, {}).then((r) => {
        expect(r.status, r.text).toBe(200);
        order.push('other');
      });
    };
    const tree = await t.call('POST', `/api/workflows/${rootId}/execute`, {});
    order.push('tree');
    expect(tree.status, tree.body?.error).toBe(200);
    expect(otherRun).toBeDefined();
    await otherRun;
    expect(order).toEqual(['other', 'tree']);
  }, 120_000);

  it('runs a wide fan-out of child runs and of waiting blocks without a listener-leak warning: their listeners are bounded by the concurrency', async () => {
    // Each concurrent block or child run listens to its run's signal until it ends. Node warns about a possible
    // leak past 10 listeners on one signal; the count is bounded by the tree's concurrency (32), not a leak, and
    // the warning told operators of one on every wide parallel.
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const waitFor = (seconds: number) => ({ blocks: [start(), { id: 'w', type: 'wait', name: 'Wait', config: { seconds } }], edges: [{ from: 'start', to: 'w' }] });
      const childId = await deploy(t, 'waiting-child', waitFor(0.2));
      const children = await deploy(t, 'wide-children', fanOut(childId, 16));
      const waits = await deploy(t, 'wide-waits', {
        blocks: [start(), { id: 'fan', type: 'parallel', name: 'Fan', config: { kind: 'count', count: 16 }, blocks: [{ id: 'w', type: 'wait', name: 'Wait', config: { seconds: 0.2 } }] }],
        edges: [{ from: 'start', to: 'fan' }],
      });
      for (const id of [children, waits]) {
        const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
        expect(r.status, r.text).toBe(200);
        expect(r.body.success).toBe(true);
      }
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
