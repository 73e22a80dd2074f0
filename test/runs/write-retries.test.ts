import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

/**
 * Weft's own writes of an async run meeting a lost database connection (both database modes; the
 * process-level faults are in test/faults): the write is retried with backoff within the lease and the
 * user's run is not failed for it; a job whose lease could not be taken at all is dispatched again by
 * the job sweep, in the embedded mode too (before, it stayed queued until a restart).
 */
let t: TestServer;
let db: Database;
let original: Database['query'];
/** Statements matching `pattern` fail with a connection error until `until`, or for the first `times` of them. */
let outage: { pattern: RegExp; until?: number; times?: number; failures: number } | undefined;

beforeAll(async () => {
  // One worker slot: a run accepted while it is taken waits queued, and its lease is a statement of its own.
  t = await startTestServer({ env: { WEFT_JOB_LEASE_MS: '1000', WEFT_WORKER_CONCURRENCY: '1' } });
  db = t.server.ctx.db;
  original = db.query.bind(db);
  db.query = (async (text: string, params?: readonly unknown[]) => {
    const active = outage && (outage.until !== undefined ? Date.now() < outage.until : outage.failures < (outage.times ?? 0));
    if (outage && active && outage.pattern.test(text)) {
      outage.failures++;
      throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    }
    return original(text, params);
  }) as Database['query'];
});
afterAll(async () => {
  if (db) db.query = original;
  await t?.close();
});

describe('async run writes meeting a lost connection', () => {
  it('a step record that fails for a moment is retried: the run completes', async () => {
    // Two blocks: the last one's record goes with the run's final state (src/runs/step-recorder.ts), the first's alone.
    const id = await deploy(t, 'step-retry', {
      blocks: [start(), fn('f', 'return 42'), fn('g', 'return <f> + 1')], edges: [{ from: 'start', to: 'f' }, { from: 'f', to: 'g' }],
    });
    // By count, not by time: on a loaded machine the run may reach its step record after any fixed window.
    outage = { pattern: /INSERT INTO execution_steps/, times: 2, failures: 0 };
    const r = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    expect(r.status).toBe(202);
    const job = await waitForJob(t, r.body.jobId, 30_000);
    expect(outage.failures).toBeGreaterThan(0);
    expect({ status: job.status, error: job.error ?? null }).toEqual({ status: 'completed', error: null });
  });

  it('a lease that cannot be taken for longer than the lease: the sweep dispatches the run again', async () => {
    const id = await deploy(t, 'lease-retry', { blocks: [start(), fn('f', 'return 7')], edges: [{ from: 'start', to: 'f' }] });
    // A run accepted while the worker has a free slot is leased by the statement that accepts it; this
    // one holds the only slot for a second, so the run under test is queued and leased on its own.
    const holder = await deploy(t, 'lease-holder', {
      blocks: [start(), { id: 'nap', type: 'wait', name: 'Nap', config: { seconds: 1 } }], edges: [{ from: 'start', to: 'nap' }],
    });
    const held = await t.call('POST', `/api/workflows/${holder}/execute`, { async: true });
    expect(held.status).toBe(202);
    outage = { pattern: /SET status = 'processing'/, times: Number.POSITIVE_INFINITY, failures: 0 };
    const r = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    expect(r.status).toBe(202);
    // The lease fails from its first try until well past the lease's length, then the database is back.
    const deadline = Date.now() + 30_000;
    while (outage.failures === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(outage.failures).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    outage = undefined;
    const job = await waitForJob(t, r.body.jobId, 30_000);
    expect(job.status).toBe('completed');
    expect((await waitForJob(t, held.body.jobId, 30_000)).status).toBe('completed');
  });
});
