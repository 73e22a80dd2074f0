import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

/**
 * A worker whose lease on an async run was taken over (it lagged past its lease and another worker leased
 * the run) learns it at its next renewal: it stops the run and records nothing more, neither later steps
 * nor the final state, so the run is not executed by two workers at once.
 */
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_JOB_LEASE_MS: '1000' } });
});
afterAll(async () => {
  await t?.close();
});

describe('lease fencing of async runs', () => {
  it('a worker that lost its lease stops and never writes the run\'s end', async () => {
    const id = await deploy(t, 'fenced', {
      blocks: [start(), { id: 'nap', type: 'wait', name: 'Nap', config: { seconds: 3 } }, fn('after', 'return { ran: true }')],
      edges: [{ from: 'start', to: 'nap' }, { from: 'nap', to: 'after' }],
    });
    const queued = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    expect(queued.status).toBe(202);
    const executionId: string = queued.body.executionId;
    const db = t.server.ctx.db;
    const row = async () => (await db.query<{ status: string; attempts: number; ended_at: Date | null }>(
      'SELECT status, attempts, ended_at FROM executions WHERE id = $1', [executionId]))[0];
    for (const until = Date.now() + 10_000; (await row())?.status !== 'processing';) {
      if (Date.now() > until) throw new Error('the run never started');
      await new Promise((r) => setTimeout(r, 20));
    }
    // Another worker takes the run over (as its lease sweep would after a lapse): the lease is now its.
    const taken = await db.query(
      `UPDATE executions SET attempts = attempts + 1, lease_until = clock_timestamp() + interval '1 hour' WHERE id = $1 AND status = 'processing' RETURNING id`,
      [executionId],
    );
    expect(taken).toHaveLength(1);

    // Well past the nap and several renewals: the first worker stopped without finishing the run.
    await new Promise((r) => setTimeout(r, 4500));
    const after = await row();
    expect(after).toMatchObject({ status: 'processing', attempts: 2, ended_at: null });
    const steps = await db.query<{ step_key: string }>('SELECT step_key FROM execution_steps WHERE execution_id = $1', [executionId]);
    expect(steps.map((s) => s.step_key)).not.toContain('after');
  }, 30_000);
});
