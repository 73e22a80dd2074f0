// Embedded: the process holds the data directory, so at start-up every resume claim left behind is a dead
// process's. All of them are released at once (src/runs/resume-claims.ts), not one page of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertResumeEntry, type PausedRow } from '../../src/runs/pause-store.js';
import { INTERRUPTED_RESUME } from '../../src/runs/resume-claims.js';
import { dbMode, freshDatabase, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';

let t: TestServer | undefined;
let dataDir: string;
beforeAll(async () => {
  dataDir = (await freshDatabase()).dataDir as string;
});
afterAll(async () => {
  await t?.close();
});

const approval = { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Ship it?', fields: [{ name: 'decision', type: 'string', required: true }] } };

describe.skipIf(dbMode() !== 'pglite')('resume claims left by a process that died (embedded)', () => {
  it('are all released at the restart, past the first page of them', async () => {
    t = await startTestServer({ reuse: { dataDir } });
    const wf = await deploy(t, 'many-claims', { blocks: [start(), approval], edges: [{ from: 'start', to: 'approval' }] });
    const runs = 130;
    for (let i = 0; i < runs; i++) {
      const paused = await t.call('POST', `/api/workflows/${wf}/execute`, {});
      expect(paused.body.status).toBe('paused');
    }
    // Each paused run's point claimed by a resume whose process then died (a lease far from lapsing).
    const db = t.server.ctx.db;
    const rows = await db.query<Pick<PausedRow, 'id' | 'execution_id'>>('SELECT id, execution_id FROM paused_executions WHERE workflow_id = $1', [wf]);
    expect(rows).toHaveLength(runs);
    for (const r of rows) {
      await insertResumeEntry(db, { pausedId: r.id, parentExecutionId: r.execution_id, contextId: 'approval', input: { decision: 'yes' }, claimed: true, leaseMs: 3_600_000 });
      await db.query(`UPDATE paused_executions SET pause_points = jsonb_set(pause_points, '{approval,resumeStatus}', '"resuming"') WHERE id = $1`, [r.id]);
    }
    await t.close();

    t = await startTestServer({ reuse: { dataDir } });
    const restarted = t;
    const claimed = async () => (await restarted.server.ctx.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM resume_queue q JOIN paused_executions p ON p.id = q.paused_execution_id WHERE p.workflow_id = $1 AND q.status = 'claimed'", [wf]))[0]?.n;
    for (const until = Date.now() + 10_000; (await claimed()) !== 0 && Date.now() < until;) await new Promise((r) => setTimeout(r, 100));
    expect(await claimed()).toBe(0);
    const failed = await t.server.ctx.db.query<{ failure_reason: string }>(
      'SELECT q.failure_reason FROM resume_queue q JOIN paused_executions p ON p.id = q.paused_execution_id WHERE p.workflow_id = $1', [wf]);
    expect(failed).toHaveLength(runs);
    expect(new Set(failed.map((f) => f.failure_reason))).toEqual(new Set([INTERRUPTED_RESUME]));
    // Every point waits for a person again: the last one is resumed at once.
    const last = rows[rows.length - 1] as Pick<PausedRow, 'execution_id'>;
    const resumed = await t.call('POST', `/api/resume/${wf}/${last.execution_id}/approval`, { input: { decision: 'yes' } });
    expect(resumed.status, resumed.text).toBe(200);
  }, 120_000);
});
