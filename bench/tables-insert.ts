import { newHexId } from '../src/ids.js';
import { percentile, runIfMain } from './support.js';
import { benchWorkspace, COLUMNS, startBenchServer } from './tables-query.js';

/**
 * tables-insert: rows/s of batch inserts of 1,000 rows (8 columns, one unique, typed indexes on the
 * number and date columns) through the HTTP API, sequentially and from 4 concurrent clients, beside
 * the same rows inserted with one raw SQL statement per batch into a table with the same indexes.
 *
 * PGlite by default; DATABASE_URL=postgres://... runs it on PostgreSQL (the database must exist).
 */

const BATCH = 1000;
let seq = 0;
function batch(): Record<string, unknown>[] {
  return Array.from({ length: BATCH }, () => {
    const i = ++seq;
    return {
      name: `User ${i}`, email: `user${i}@example.com`, age: 18 + ((i * 7919) % 60), score: ((i * 104729) % 10000) / 100,
      city: `city_${i % 50}`, active: i % 3 === 0, joined: `202${i % 5}-0${1 + (i % 9)}-1${i % 10}`, tags: [`t${i % 7}`],
    };
  });
}

export async function run(): Promise<Record<string, number>> {
  const batches = Number(process.env.BENCH_BATCHES ?? 30);
  const t = await startBenchServer();
  try {
    const db = t.server.ctx.db;
    const { workspaceId, key } = await benchWorkspace(t);
    const post = async (path: string, body: unknown) => {
      const res = await fetch(t.url + path, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
      return JSON.parse(text) as { data: { table?: { id: string }; insertedCount?: number } };
    };
    const table = async (name: string) => (await post('/api/v1/tables', { workspaceId, name, schema: { columns: COLUMNS } })).data.table!.id;
    const apiTable = await table('bench_api');
    const apiTable4 = await table('bench_api4');
    const rawTable = await table('bench_raw');

    const apiInsert = async (id: string) => {
      const r = await post(`/api/v1/tables/${id}/rows`, { workspaceId, rows: batch() });
      if (r.data.insertedCount !== BATCH) throw new Error('short insert');
    };
    let rawPosition = 0;
    const rawInsert = async () => {
      const payload = JSON.stringify(batch().map((data) => ({ id: newHexId('row_'), data })));
      const first = rawPosition;
      rawPosition += BATCH;
      await db.query(
        `INSERT INTO table_rows (id, table_id, data, position)
         SELECT e.value->>'id', $1, e.value->'data', $2::bigint + e.ord - 1 FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS e(value, ord)`,
        [rawTable, first, payload],
      );
    };

    // Warm up both paths.
    for (let i = 0; i < 2; i++) {
      await apiInsert(apiTable);
      await rawInsert();
    }
    const apiTimes: number[] = [];
    const rawTimes: number[] = [];
    let apiTotal = 0;
    let rawTotal = 0;
    for (let i = 0; i < batches; i++) {
      let t0 = performance.now();
      await apiInsert(apiTable);
      const a = performance.now() - t0;
      t0 = performance.now();
      await rawInsert();
      const r = performance.now() - t0;
      apiTimes.push(a);
      rawTimes.push(r);
      apiTotal += a;
      rawTotal += r;
    }
    const concurrent = 4;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: concurrent }, async () => {
      for (let i = 0; i < Math.ceil(batches / concurrent); i++) await apiInsert(apiTable4);
    }));
    const concurrentMs = performance.now() - t0;
    const concurrentRows = concurrent * Math.ceil(batches / concurrent) * BATCH;
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const apiRowsPerSec = Math.round((batches * BATCH) / (apiTotal / 1000));
    const rawRowsPerSec = Math.round((batches * BATCH) / (rawTotal / 1000));
    return {
      batchRows: BATCH,
      batches,
      'api.rowsPerSec': apiRowsPerSec,
      'api.batchP50Ms': +percentile(sorted(apiTimes), 50).toFixed(2),
      'api.batchP99Ms': +percentile(sorted(apiTimes), 99).toFixed(2),
      'api4Clients.rowsPerSec': Math.round(concurrentRows / (concurrentMs / 1000)),
      'rawSql.rowsPerSec': rawRowsPerSec,
      'rawSql.batchP50Ms': +percentile(sorted(rawTimes), 50).toFixed(2),
      ratioApiToRaw: +(apiRowsPerSec / rawRowsPerSec).toFixed(3),
    };
  } finally {
    await t.close();
  }
}

await runIfMain(import.meta.url, 'tables-insert', run);
