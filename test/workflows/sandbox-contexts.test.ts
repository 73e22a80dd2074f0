// WEFT_SANDBOX_CONTEXTS=workspace through the public API: a function block sees no global an earlier block
// set, in its run or an earlier one, although it ran in a context an earlier call used (the reuse counter on
// /metrics says so), and built-ins cannot be changed. docs/architecture.md, "Sandbox contexts".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { total, parseMetrics } from '../observability/metrics-text.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

const TOKEN = 'contexts-metrics-token';
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_SANDBOX_CONTEXTS: 'workspace', WEFT_METRICS_TOKEN: TOKEN } });
});
afterAll(async () => {
  await t?.close();
});

async function reusedSoFar(): Promise<number> {
  const r = await request(`${t.url}/metrics`, 'GET', undefined, { authorization: `Bearer ${TOKEN}` });
  expect(r.status).toBe(200);
  return total(parseMetrics(r.text), 'weft_sandbox_contexts_reused_total');
}

const execute = async (id: string, inputs: Record<string, unknown>) => {
  const r = await t.call('POST', `/api/workflows/${id}/execute`, { inputs });
  expect(r.status, r.text).toBe(200);
  return r.body;
};

describe('function blocks with contexts reused per workspace', () => {
  it('no block sees the globals an earlier block left, in its run or an earlier one, though contexts are reused', async () => {
    const id = await deploy(t, 'contexts-globals', {
      blocks: [
        start([{ name: 'who', type: 'string' }]),
        fn('remember', 'globalThis.seen = globalThis.seen ?? []; seen.push(<start.who>); visits = 1; return { joined: seen.join(",") }'),
        fn('recall', 'return { before: <remember.joined>, seen: typeof seen, visits: typeof visits }'),
      ],
      edges: [{ from: 'start', to: 'remember' }, { from: 'remember', to: 'recall' }],
    });
    const before = await reusedSoFar();
    const answers = [];
    for (const who of ['ann', 'bob', 'cy', 'dee']) answers.push((await execute(id, { who })).output);
    expect(answers).toEqual(['ann', 'bob', 'cy', 'dee'].map((who) => ({ before: who, seen: 'undefined', visits: 'undefined' })));
    // Eight calls one after another: most took a context an earlier call of the workspace left.
    expect(await reusedSoFar()).toBeGreaterThanOrEqual(before + 4);
  });

  it('built-ins are frozen: changing one fails in strict code and leaves it as it was for every run', async () => {
    const id = await deploy(t, 'contexts-builtins', {
      blocks: [
        start(),
        fn('tamper', `'use strict';
          const tried = [];
          for (const change of [() => { Array.prototype.extra = 1; }, () => { JSON.parse = () => 'forged'; }, () => { Object.prototype.polluted = true; }]) {
            try { change(); tried.push('changed'); } catch (e) { tried.push(e.name); }
          }
          class Missing extends Error { constructor(m) { super(m); this.name = 'Missing'; } }
          return { tried, error: String(new Missing('no such row')), parsed: JSON.parse('{"a":1}').a, polluted: ({}).polluted ?? null }`),
      ],
      edges: [{ from: 'start', to: 'tamper' }],
    });
    for (let i = 0; i < 2; i++) {
      expect((await execute(id, {})).output).toEqual({
        tried: ['TypeError', 'TypeError', 'TypeError'], error: 'Missing: no such row', parsed: 1, polluted: null,
      });
    }
  });
});
