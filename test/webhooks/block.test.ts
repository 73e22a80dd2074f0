// The webhook block: an entry like start; a definition may hold both and each run enters at one.
import { describe, expect, it } from 'vitest';
import { validateDefinition, type StepRecord } from '../../src/engine/index.js';
import { fn, run, start, workflow } from '../engine/helpers.js';

const hook = (config: Record<string, unknown> = {}) => ({ id: 'hook', type: 'webhook', name: 'Webhook', config });

describe('webhook block', () => {
  it('passes the delivery through and resolves <webhook.x>, headers and query', async () => {
    const def = workflow([hook(), fn('f', 'return { a: <webhook.a>, ev: <webhook.event>, q: <webhook.query>.x, h: <webhook.headers>["x-k"] }')], [{ from: 'hook', to: 'f' }]);
    const r = await run(def, { input: { a: 1, event: 'push', query: { x: '2' }, headers: { 'x-k': 'v' } }, entry: 'webhook' });
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ a: 1, ev: 'push', q: '2', h: 'v' });
  });

  it('coerces declared fields and keeps headers, query, event, id, data', async () => {
    const def = workflow([hook({ inputFormat: [{ name: 'n', type: 'number', required: true }] }), fn('f', 'return [<webhook.n>, <webhook.id>, <webhook.data>]')], [{ from: 'hook', to: 'f' }]);
    const r = await run(def, { input: { n: '5', id: 'evt_1', data: { k: 1 }, headers: {} }, entry: 'webhook' });
    expect(r.output).toEqual([5, 'evt_1', { k: 1 }]);
    const bad = validateDefinition(workflow([hook({ inputFormat: [{ name: 'n', type: 'number' }] }), fn('f', 'return <webhook.nope>')], [{ from: 'hook', to: 'f' }]));
    expect(bad.ok).toBe(false);
  });

  it('a definition with start and webhook enters at the one asked for', async () => {
    const def = workflow(
      [start(), hook(), fn('a', 'return "via start " + <start.x>'), fn('b', 'return "via webhook " + <webhook.x>')],
      [{ from: 'start', to: 'a' }, { from: 'hook', to: 'b' }],
    );
    expect(validateDefinition(def).ok).toBe(true);
    expect((await run(def, { input: { x: 1 } })).output).toBe('via start 1');
    expect((await run(def, { input: { x: 2 }, entry: 'webhook' })).output).toBe('via webhook 2');
  });

  it('a run picked up again from its recorded steps (a resume) keeps the entry it started at', async () => {
    const def = workflow(
      [start(), hook(), fn('a', 'return "start:" + <start.x>'), fn('b', 'return "hook:" + <webhook.x>')],
      [{ from: 'start', to: 'a' }, { from: 'hook', to: 'b' }],
    );
    const steps: StepRecord[] = [];
    await run(def, { input: { x: 5 }, entry: 'webhook', onStep: async (s) => { steps.push(s); } });
    const hookStep = steps.filter((s) => s.blockId === 'hook');
    expect(hookStep).toHaveLength(1);
    const resumed = await run(def, { input: { x: 5 }, recorded: new Map(hookStep.map((s) => [s.key, s])) });
    expect(resumed.output).toBe('hook:5');
  });

  it('a webhook-only definition runs from the webhook block by default; two webhook blocks are refused', async () => {
    const def = workflow([hook(), fn('b', 'return <webhook.x>')], [{ from: 'hook', to: 'b' }]);
    expect((await run(def, { input: { x: 3 } })).output).toBe(3);
    const two = validateDefinition(workflow([hook(), { ...hook(), id: 'h2', name: 'Other' }], []));
    expect(two.ok).toBe(false);
    const noSecret = validateDefinition(workflow([hook({ provider: 'github' })], []));
    expect(noSecret.ok).toBe(false);
    const badPath = validateDefinition(workflow([hook({ path: 'a/b' })], []));
    expect(badPath.ok).toBe(false);
  });
});
