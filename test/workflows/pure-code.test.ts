// Function blocks whose code only computes a value from its inputs are evaluated without a V8 context
// (docs/architecture.md, "Pure code"), through the public API: the answer is the one the sandbox gives with the
// evaluator off (WEFT_SANDBOX_PURE_CODE=off), /metrics counts the calls, and code outside the subset, or a
// run that already has a context, still runs in the sandbox.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { total, parseMetrics } from '../observability/metrics-text.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

const TOKEN = 'pure-code-metrics-token';
let on: TestServer;
let off: TestServer;

beforeAll(async () => {
  [on, off] = await Promise.all([
    startTestServer({ env: { WEFT_METRICS_TOKEN: TOKEN } }),
    startTestServer({ env: { WEFT_METRICS_TOKEN: TOKEN, WEFT_SANDBOX_PURE_CODE: 'off' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([on?.close(), off?.close()]);
});

async function counters(t: TestServer): Promise<{ pure: number; created: number }> {
  const r = await request(`${t.url}/metrics`, 'GET', undefined, { authorization: `Bearer ${TOKEN}` });
  expect(r.status).toBe(200);
  const samples = parseMetrics(r.text);
  return { pure: total(samples, 'weft_sandbox_pure_calls_total'), created: total(samples, 'weft_sandbox_contexts_created_total') };
}

/** The spec's answer without what differs from run to run (ids, timings). */
async function execute(t: TestServer, id: string, inputs: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await t.call('POST', `/api/workflows/${id}/execute`, { inputs });
  expect(r.status, r.text).toBe(200);
  const { success, output, error } = r.body as Record<string, unknown>;
  return { success, output, error };
}

const mapping = {
  blocks: [
    start([{ name: 'order', type: 'object' }, { name: 'rate', type: 'number', default: 1 }]),
    fn('map', `const items = <start.order>.items ?? [];
      if (items.length === 0) return { empty: true };
      return { id: <start.order>.id, first: items[0].sku, count: items.length, total: items[0].qty * items[0].price * <start.rate>,
               label: \`\${<start.order>.customer?.name ?? 'guest'} (\${items.length})\`, ...<start.order>.meta }`),
  ],
  edges: [{ from: 'start', to: 'map' }],
};

describe('pure function blocks', () => {
  it('answer as the sandbox does, without a V8 context, and are counted', async () => {
    const [idOn, idOff] = await Promise.all([deploy(on, 'pure-mapping', mapping), deploy(off, 'pure-mapping', mapping)]);
    const cases = [
      { order: { id: 'o-1', items: [{ sku: 'a', qty: 2, price: 2.5 }], customer: { name: 'Ann' }, meta: { channel: 'web', __proto__: 'kept' } }, rate: 1.1 },
      { order: { id: 'o-2', items: [] } },
      { order: { id: 'o-3', items: [{ sku: 'b', qty: 1, price: 0.1 }, { sku: 'c' }] }, rate: 3 },
    ].map((c) => JSON.parse(JSON.stringify(c)) as Record<string, unknown>);
    const before = await counters(on);
    const answers = [];
    for (const inputs of cases) {
      const answer = await execute(on, idOn, inputs);
      expect(answer).toEqual(await execute(off, idOff, inputs));
      answers.push(answer.output);
    }
    expect(answers[0]).toEqual({ id: 'o-1', first: 'a', count: 1, total: 5.5, label: 'Ann (1)', channel: 'web' });
    expect(answers[1]).toEqual({ empty: true });
    const after = await counters(on);
    expect(after.pure).toBe(before.pure + cases.length);
    expect(after.created).toBe(before.created);
    expect((await counters(off)).pure).toBe(0);
  });

  it('leave code outside the subset, its errors, and the later blocks of a run with a context to the sandbox', async () => {
    const id = await deploy(on, 'pure-mixed', {
      blocks: [
        start([{ name: 'n', type: 'number' }]),
        fn('round', 'Object.prototype.tagged = "by round"; return { value: Math.round(<start.n> * 2.5) }'),
        fn('after', 'return { value: <round.value> + 1, seen: ({}).tagged ?? null, own: <round>.tagged }'),
      ],
      edges: [{ from: 'start', to: 'round' }, { from: 'round', to: 'after' }],
    });
    const before = await counters(on);
    // `after` is pure, but its run's context was changed by `round`: it runs there and sees the change.
    expect((await execute(on, id, { n: 3 })).output).toEqual({ value: 9, seen: 'by round', own: 'by round' });
    const after = await counters(on);
    expect(after.pure).toBe(before.pure);
    expect(after.created).toBeGreaterThan(before.created);

    const failing = await deploy(on, 'pure-throws', { blocks: [start(), fn('read', 'return <start.missing>.x')], edges: [{ from: 'start', to: 'read' }] });
    const r = await on.call('POST', `/api/workflows/${failing}/execute`, { inputs: {} });
    expect(r.body.success, r.text).toBe(false);
    expect(JSON.stringify(r.body)).toContain("Cannot read properties of null (reading 'x')");
  });
});
