import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { runChargesSql } from '../../src/limits/usage.js';
import { finishRuns } from '../../src/runs/store.js';
import { bootstrappedDatabase } from '../support/harness.js';
import { planOf } from '../support/query-plan.js';

// The statement that ends async runs (and webhook and caller-id runs) must find its rows by index at any size
// of the run history: a plan that scans `executions` makes every run's end cost more as runs accumulate.
describe('the statement that ends runs', () => {
  let db: Database;
  let workspaceId: string;
  beforeAll(async () => {
    const boot = await bootstrappedDatabase();
    workspaceId = boot.workspaceId;
    db = await connectDatabase({ dataDir: boot.where.dataDir ?? '', databaseUrl: boot.where.databaseUrl });
    // A few thousand runs of history: the size at which a 100-row estimate for the batch made a full scan look cheaper.
    await db.exec(`INSERT INTO executions (id, workspace_id, workflow_id, mode, trigger, status, billed_account, input, attempts, started_at)
      SELECT gen_random_uuid()::text, '${workspaceId}', gen_random_uuid(), 'async', 'api', 'processing', 'workspace:${workspaceId}', '{}', 1, now()
        FROM generate_series(1, 4000)`);
    await db.exec('VACUUM ANALYZE executions');
  });
  afterAll(async () => {
    await db?.close();
  });

  it('looks each run up by its id, whatever the history holds', async () => {
    const [{ id }] = await db.query<{ id: string }>('SELECT id FROM executions ORDER BY id LIMIT 1');
    const f = { status: 'completed' as const, output: { ok: true }, error: null, errorBlock: null, trace: [], startedAt: new Date(), endedAt: new Date(), durationMs: 1 };
    const charge = { sql: runChargesSql, period: '2026-11-01', amountUsd: '0.005000000' };
    const plan = await planOf(db, (q) => finishRuns(q, [{ id, attempt: 1, f }], charge));
    expect(plan).not.toMatch(/Seq Scan on executions/);
    expect(plan).toMatch(/Index Scan using executions_pkey on executions/);
    // The plan a prepared statement may keep once it stops planning per call, made without the values: the
    // ids' array is then taken for ten, still fewer lookups than a scan.
    const generic = await planOf(db, (q) => finishRuns(q, [{ id, attempt: 1, f }], charge), true);
    if (generic !== undefined) {
      expect(generic).not.toMatch(/Seq Scan on executions/);
      expect(generic).toMatch(/executions_pkey/);
    }
    // And it still ends the run (the plan is the real statement's).
    const ended = await finishRuns(db, [{ id, attempt: 1, f }], charge);
    expect(ended.get(id)).toMatchObject({ charged: true });
    expect(await db.query('SELECT status FROM executions WHERE id = $1', [id])).toEqual([{ status: 'completed' }]);
  });
});
