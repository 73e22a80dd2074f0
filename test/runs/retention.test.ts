// Run-log retention: finished runs older than WEFT_LOG_RETENTION_DAYS disappear from the logs and job
// APIs; paused runs stay answerable; usage totals do not change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeysRevokedBefore } from '../../src/accounts/store.js';
import { deleteAuditBefore } from '../../src/audit/audit-log.js';
import { RunRetention } from '../../src/runs/retention.js';
import { systemClock } from '../../src/schedules/clock.js';
import { ManualClock, startScheduledServer, T0 } from '../schedules/support.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise', WEFT_LOG_RETENTION_DAYS: '1' } });
});
afterAll(async () => {
  await t?.close();
});

const DAY = 86_400_000;
/** A sweep as the server's would run it, at a time `days` from now. */
const at = (days: number) => ({ ...systemClock, now: () => Date.now() + days * DAY });
const sweepAt = (days: number, batchSize = 2) =>
  new RunRetention(t.server.ctx.db, { days: t.config.logRetentionDays, batchSize, intervalMs: 60_000 }, t.server.ctx.log, at(days)).sweep();
const usageCost = async () => (await t.call('GET', '/api/users/me/usage-limits')).body.usage.currentPeriodCost as number;

describe('run-log retention', () => {
  it('deletes expired finished runs in batches and keeps paused ones and usage', async () => {
    expect(t.config.logRetentionDays).toBe(1);
    const ok = await deploy(t, 'retention-ok', { blocks: [start(), fn('f', 'return 1')], edges: [{ from: 'start', to: 'f' }] });
    const bad = await deploy(t, 'retention-bad', { blocks: [start(), fn('f', 'throw new Error("no")')], edges: [{ from: 'start', to: 'f' }] });
    const human = await deploy(t, 'retention-paused', {
      blocks: [start(), { id: 'ask', type: 'human', name: 'Ask', config: { message: 'ok?', fields: [{ name: 'ok', type: 'boolean' }] } }],
      edges: [{ from: 'start', to: 'ask' }],
    });
    const finished: string[] = [];
    for (let i = 0; i < 3; i++) finished.push((await t.call('POST', `/api/workflows/${ok}/execute`, { inputs: {} })).body.executionId);
    finished.push((await t.call('POST', `/api/workflows/${bad}/execute`, { inputs: {} })).body.executionId);
    const paused = (await t.call('POST', `/api/workflows/${human}/execute`, { inputs: {} })).body.executionId;
    for (const id of [...finished, paused]) expect((await t.call('GET', `/api/v1/logs/${id}`)).status).toBe(200);
    const cost = await usageCost();

    // Within the retention nothing goes.
    expect(await sweepAt(0.5)).toBe(0);
    for (const id of finished) expect((await t.call('GET', `/api/v1/logs/${id}`)).status).toBe(200);

    // Past it, every finished run goes (two per statement here), the paused one stays.
    expect(await sweepAt(2)).toBe(finished.length);
    for (const id of finished) expect((await t.call('GET', `/api/v1/logs/${id}`)).status).toBe(404);
    expect((await t.call('GET', `/api/v1/logs/${paused}`)).status).toBe(200);
    expect((await t.call('GET', `/api/resume/${human}/${paused}`)).status).toBe(200);
    expect(await usageCost()).toBe(cost);
    expect(await sweepAt(2)).toBe(0);
  });

  it('keeps everything when the retention is 0', async () => {
    const keep = new RunRetention(t.server.ctx.db, { days: 0, batchSize: 10, intervalMs: 60_000 }, t.server.ctx.log, at(1000));
    const wf = await deploy(t, 'retention-keep', { blocks: [start(), fn('f', 'return 2')], edges: [{ from: 'start', to: 'f' }] });
    const id = (await t.call('POST', `/api/workflows/${wf}/execute`, { inputs: {} })).body.executionId;
    expect(await keep.sweep()).toBe(0);
    expect((await t.call('GET', `/api/v1/logs/${id}`)).status).toBe(200);
  });

  it('sweeps every WEFT_LOG_RETENTION_INTERVAL_SECONDS and, embedded, vacuums the run tables after deleting', async () => {
    // Runs are stamped by the database's clock (today); the server's clock starts in 2030, so they are expired.
    const clock = new ManualClock(T0);
    const s = await startScheduledServer(clock, { env: { WEFT_LOG_RETENTION_DAYS: '30', WEFT_LOG_RETENTION_INTERVAL_SECONDS: '120' } });
    try {
      expect(s.config.logRetentionIntervalMs).toBe(120_000);
      const wf = await deploy(s, 'retention-interval', { blocks: [start(), fn('f', 'return 3')], edges: [{ from: 'start', to: 'f' }] });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await s.call('POST', `/api/workflows/${wf}/execute`, { inputs: {} })).body.executionId);
      const vacuums = async () => (await s.server.ctx.db.query<{ n: number }>(
        `SELECT coalesce(vacuum_count, 0)::int AS n FROM pg_stat_user_tables WHERE relname = 'executions'`))[0]?.n ?? 0;
      const before = await vacuums();

      // Short of the interval, no sweep.
      clock.advance(119_000);
      await s.server.services.retention.settled();
      for (const id of ids) expect((await s.call('GET', `/api/v1/logs/${id}`)).status).toBe(200);

      clock.advance(1_000);
      await new Promise((r) => setImmediate(r));
      await s.server.services.retention.settled();
      for (const id of ids) expect((await s.call('GET', `/api/v1/logs/${id}`)).status).toBe(404);
      // PGlite has no autovacuum: the sweep's own VACUUM makes the deleted rows' space reusable.
      if (s.server.ctx.db.mode === 'pglite') expect(await vacuums()).toBeGreaterThan(before);

      // The next sweep is armed again.
      const again = (await s.call('POST', `/api/workflows/${wf}/execute`, { inputs: {} })).body.executionId as string;
      clock.advance(120_000);
      await new Promise((r) => setImmediate(r));
      await s.server.services.retention.settled();
      expect((await s.call('GET', `/api/v1/logs/${again}`)).status).toBe(404);
    } finally {
      await s.close();
    }
  });
});

describe('step records of runs that ended', () => {
  const stepCount = async (executionId: string) =>
    (await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM execution_steps WHERE execution_id = $1', [executionId]))[0].n;

  it('go with the next sweep once the run has ended (also when the retention keeps everything); a paused run keeps its own', async () => {
    const chain = await deploy(t, 'retention-steps', {
      blocks: [start(), fn('a', 'return { big: "x".repeat(20000) }'), fn('b', 'return { n: <a.big>.length }')],
      edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'b' }],
    });
    const human = await deploy(t, 'retention-steps-paused', {
      blocks: [start(), fn('a', 'return 7'), { id: 'ask', type: 'human', name: 'Ask', config: { message: 'ok?', fields: [{ name: 'ok', type: 'boolean' }] } }],
      edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'ask' }],
    });
    const accepted = await t.call('POST', `/api/workflows/${chain}/execute`, { inputs: {}, async: true });
    expect(accepted.status, accepted.text).toBe(202);
    const job = await waitForJob(t, accepted.body.taskId);
    expect(job.status).toBe('completed');
    const ended = accepted.body.executionId as string;
    const pausedRun = await t.call('POST', `/api/workflows/${human}/execute`, { inputs: {}, async: true });
    const paused = pausedRun.body.executionId as string;
    for (let i = 0; i < 200 && (await t.call('GET', `/api/v1/logs/${paused}`)).body.data?.status !== 'paused'; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await t.call('GET', `/api/v1/logs/${paused}`)).body.data.status).toBe('paused');
    expect(await stepCount(ended)).toBeGreaterThan(0);
    expect(await stepCount(paused)).toBeGreaterThan(0);

    // Within a minute of its end a run keeps them; after it, a sweep takes them, retention 0 (keep every run) too.
    const keepAll = (days: number) => new RunRetention(t.server.ctx.db, { days: 0, batchSize: 1, intervalMs: 60_000 }, t.server.ctx.log, at(days));
    await keepAll(0).sweep();
    expect(await stepCount(ended)).toBeGreaterThan(0);
    await keepAll(0.01).sweep(); // 14.4 minutes on
    expect(await stepCount(ended)).toBe(0);
    expect(await stepCount(paused)).toBeGreaterThan(0);
    // The finished run's log is whole: its trace never came from the steps.
    const log = await t.call('GET', `/api/v1/logs/${ended}`);
    expect(log.status).toBe(200);
    expect(log.body.data.output).toEqual({ n: 20000 });
    expect(log.body.data.trace.find((e: { blockId: string }) => e.blockId === 'a').output).toEqual({ big: 'x'.repeat(20000) });
  });
});


describe('history that is not runs', () => {
  const auditCount = (db: TestServer['server']['ctx']['db'], workspaceId: string) =>
    db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_logs WHERE workspace_id = $1', [workspaceId]).then((r) => r[0].n);
  const keyRows = (db: TestServer['server']['ctx']['db'], ids: string[]) =>
    db.query<{ id: string }>('SELECT id FROM api_keys WHERE id = ANY($1::uuid[])', [ids]).then((r) => r.map((k) => k.id).sort());

  it('audit entries go after WEFT_AUDIT_RETENTION_DAYS, revoked keys and webhook files after WEFT_LOG_RETENTION_DAYS, on the retention timer', async () => {
    const clock = new ManualClock(T0);
    const s = await startScheduledServer(clock, { env: { WEFT_LOG_RETENTION_DAYS: '30', WEFT_AUDIT_RETENTION_DAYS: '365', WEFT_LOG_RETENTION_INTERVAL_SECONDS: '60' } });
    try {
      const db = s.server.ctx.db;
      const made = [];
      for (const name of ['kept', 'revoked']) {
        const r = await s.call('POST', '/api/v1/keys', { workspaceId: s.workspaceId, name, type: 'workspace' });
        expect(r.status, r.text).toBe(201);
        made.push({ id: r.body.data.id as string, secret: r.body.data.key as string });
      }
      expect((await s.call('DELETE', `/api/v1/keys/${made[1].id}`)).status).toBe(200);
      // A webhook delivery's uploaded file, which counts toward the workspace's storage.
      const hook = await s.call('POST', '/api/v1/workflows', {
        workspaceId: s.workspaceId, name: 'files-retention',
        definition: { blocks: [{ id: 'hook', type: 'webhook', name: 'Hook', config: { inputFormat: [{ name: 'doc', type: 'files' }] } }], edges: [] },
      });
      const hookId: string = hook.body.data.workflow.id;
      expect((await s.call('POST', `/api/v1/workflows/${hookId}/deploy`)).status).toBe(200);
      const hookUrl: string = (await s.call('GET', `/api/v1/workflows/${hookId}`)).body.data.workflow.webhookUrl;
      const form = new FormData();
      form.append('doc', new Blob(['kept for a while']), 'doc.txt');
      expect((await fetch(hookUrl, { method: 'POST', body: form })).status).toBe(200);
      const [stored] = await db.query<{ id: string }>('SELECT id FROM webhook_files WHERE workflow_id = $1', [hookId]);
      const fileUrl = `/api/v1/webhooks/files/${stored.id}`;
      expect((await s.call('GET', fileUrl)).status).toBe(200);
      const storage = () => s.server.services.limits.storage.used(db, [s.workspaceId]);
      const withFile = await storage();
      expect(await auditCount(db, s.workspaceId)).toBeGreaterThanOrEqual(3);
      expect(await keyRows(db, made.map((k) => k.id))).toEqual(made.map((k) => k.id).sort());

      // The server's clock stands in 2030: everything written today is past both retentions.
      clock.advance(60_000);
      await new Promise((r) => setImmediate(r));
      await s.server.services.retention.settled();
      expect(await auditCount(db, s.workspaceId)).toBe(0);
      expect(await keyRows(db, made.map((k) => k.id))).toEqual([made[0].id]);
      // The file went with the runs of its time, and its bytes no longer count.
      expect((await s.call('GET', fileUrl)).status).toBe(404);
      expect(await storage()).toBe(withFile - 'kept for a while'.length);
      // The active key still works; the audit log starts again with the next action.
      expect((await s.call('GET', `/api/v1/audit-logs?workspaceId=${s.workspaceId}`, undefined, { 'x-api-key': made[0].secret })).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('are kept within their retention, and for good with 0', async () => {
    const db = t.server.ctx.db;
    const made = await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'history-kept', type: 'workspace' });
    const id: string = made.body.data.id;
    expect((await t.call('DELETE', `/api/v1/keys/${id}`)).status).toBe(200);
    const entries = await auditCount(db, t.workspaceId);
    const sweep = (days: number, audit: number, keys: number) => new RunRetention(db, {
      days: 0, batchSize: 2, intervalMs: 60_000,
      alsoSweep: [
        { name: 'audit log', days: audit, deleteBatch: (cutoff, n) => deleteAuditBefore(db, cutoff, n) },
        { name: 'revoked API keys', days: keys, deleteBatch: (cutoff, n) => deleteKeysRevokedBefore(db, cutoff, n) },
      ],
    }, t.server.ctx.log, at(days)).sweep();
    await sweep(20, 0, 0);
    await sweep(20, 30, 30);
    expect(await auditCount(db, t.workspaceId)).toBe(entries);
    expect(await keyRows(db, [id])).toEqual([id]);
    // Past both: every entry goes (two per statement), and the revoked key.
    await sweep(31, 30, 30);
    expect(await auditCount(db, t.workspaceId)).toBe(0);
    expect(await keyRows(db, [id])).toEqual([]);
  });
});
