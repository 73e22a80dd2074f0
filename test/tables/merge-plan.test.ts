import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { mergeById } from '../../src/tables/store.js';
import { bootstrappedDatabase } from '../support/harness.js';
import { planOf } from '../support/query-plan.js';

// Updating rows by id (one row's PATCH, or a batch) must find them by index however many rows the tables hold:
// a plan that scans `table_rows` makes every update cost more as the tables grow.
describe('the statement that updates rows by id', () => {
  const tableId = 'tbl_0123456789abcdef0123456789abcdef';
  let db: Database;
  beforeAll(async () => {
    const boot = await bootstrappedDatabase();
    db = await connectDatabase({ dataDir: boot.where.dataDir ?? '', databaseUrl: boot.where.databaseUrl });
    await db.query('INSERT INTO tables (id, workspace_id, name, max_rows) VALUES ($1, $2, $3, 100000)', [tableId, boot.workspaceId, 'big']);
    // A few thousand rows: the size at which a 100-row estimate for the patches made a full scan look cheaper.
    await db.exec(`INSERT INTO table_rows (id, table_id, data, position)
      SELECT 'row_' || md5(g::text), '${tableId}', jsonb_build_object('n', g, 'keep', true), g FROM generate_series(1, 4000) g`);
    await db.exec('VACUUM ANALYZE table_rows');
  });
  afterAll(async () => {
    await db?.close();
  });

  it('looks each row up by its id, and merges its patch', async () => {
    const [{ id }] = await db.query<{ id: string }>('SELECT id FROM table_rows WHERE table_id = $1 ORDER BY position LIMIT 1', [tableId]);
    const patches = [{ id, s: { n: -1 }, u: ['keep'] }];
    const plan = await planOf(db, (q) => mergeById(q, tableId, patches));
    expect(plan).not.toMatch(/Seq Scan on table_rows/);
    expect(plan).toMatch(/Index Scan using table_rows_pkey on table_rows/);
    // Also the plan made without the values, which a prepared statement may keep (support/query-plan.ts).
    const generic = await planOf(db, (q) => mergeById(q, tableId, patches), true);
    if (generic !== undefined) {
      expect(generic).not.toMatch(/Seq Scan on table_rows/);
      expect(generic).toMatch(/table_rows_pkey/);
    }
    const written = await mergeById(db, tableId, patches);
    expect(written.map((r) => r.id)).toEqual([id]);
    expect(await db.query('SELECT data FROM table_rows WHERE id = $1', [id])).toEqual([{ data: { n: -1 } }]);
  });
});
