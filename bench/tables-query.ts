import { createWorkspace, createKey } from '../test/support/accounts.js';
import type { Queryable } from '../src/db/database.js';
import { startTestServer, type TestServer } from '../test/support/harness.js';
import { percentile, runIfMain } from './support.js';

/**
 * tables-query: 100,000 rows of 8 columns. Single-flight latency (p50 / p99) of three queries
 * through the HTTP API, each beside the same query as raw SQL on the same database in the same run:
 *  - equality:   filter {"city": "city_7"}                                  (about 2,000 matches)
 *  - rangeSort:  filter {"age": {"$gte": 30, "$lt": 40}}, sort {"score": "desc"} (about 16,700 matches)
 *  - offset:     no filter, offset 5000, limit 100, table order
 * Every API answer carries an exact totalCount, so the raw baseline is the page query plus the
 * count(*) a hand-written client needs for the same answer (`rawSql`); the page query alone is
 * reported too (`rawPageOnly`). Ratios are API p50 / raw p50.
 *
 * PGlite by default; DATABASE_URL=postgres://... runs it on PostgreSQL (the database must exist).
 */

const ROWS = 100_000;
export const COLUMNS = [
  { name: 'name', type: 'string' },
  { name: 'email', type: 'string', unique: true },
  { name: 'age', type: 'number' },
  { name: 'score', type: 'number' },
  { name: 'city', type: 'string' },
  { name: 'active', type: 'boolean' },
  { name: 'joined', type: 'date' },
  { name: 'tags', type: 'json' },
];

export async function startBenchServer(): Promise<TestServer> {
  const env = { WEFT_LIMITS: 'off', WEFT_DEFAULT_PLAN: 'enterprise', ...(process.env.WEFT_QUERY_TIMEOUT_MS ? { WEFT_QUERY_TIMEOUT_MS: process.env.WEFT_QUERY_TIMEOUT_MS } : {}) };
  const url = process.env.DATABASE_URL;
  return url ? startTestServer({ env, reuse: { databaseUrl: url } }) : startTestServer({ env });
}

/** A fresh enterprise workspace with its own key (so re-runs on one PostgreSQL database do not collide). */
export async function benchWorkspace(t: TestServer): Promise<{ workspaceId: string; key: string }> {
  const ws = await createWorkspace(t.server.ctx.db, `bench-tables-${Date.now()}-${process.pid}`, t.userId, 'enterprise');
  const k = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
  return { workspaceId: ws.id, key: k.secret };
}

async function api(t: TestServer, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(t.url + path, {
    method,
    headers: { 'x-api-key': key, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as { data: Record<string, unknown> };
}

/** Loads the rows with one SQL statement and sets the table's counters as the service would. */
async function load(db: Queryable, tableId: string): Promise<void> {
  await db.query(
    `INSERT INTO table_rows (id, table_id, data, position)
     SELECT 'row_' || md5('bench' || i::text), $1,
            jsonb_build_object(
              'name', 'User ' || i,
              'email', 'user' || i || '@example.com',
              'age', 18 + (i * 7919) % 60,
              'score', ((i * 104729) % 10000) / 100.0,
              'city', 'city_' || (i % 50),
              'active', i % 3 = 0,
              'joined', to_char(date '2020-01-01' + (i % 1500)::int, 'YYYY-MM-DD'),
              'tags', jsonb_build_array('t' || (i % 7))),
            i - 1
       FROM generate_series(1::bigint, $2::bigint) AS i`,
    [tableId, ROWS],
  );
  await db.query(
    `UPDATE tables SET row_count = $2::int, next_position = $2::int,
            bytes = (SELECT sum(bytes) FROM table_rows WHERE table_id = $1) WHERE id = $1`,
    [tableId, ROWS],
  );
  await db.exec('ANALYZE table_rows');
}

interface Stats { p50: number; p99: number; mean: number }
const stats = (xs: number[]): Stats => {
  const s = [...xs].sort((a, b) => a - b);
  const r = (v: number) => +v.toFixed(3);
  return { p50: r(percentile(s, 50)), p99: r(percentile(s, 99)), mean: r(s.reduce((a, b) => a + b, 0) / s.length) };
};

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export async function run(): Promise<Record<string, number>> {
  const iterations = Number(process.env.BENCH_ITERATIONS ?? 200);
  const t = await startBenchServer();
  try {
    const db = t.server.ctx.db;
    const { workspaceId, key } = await benchWorkspace(t);
    const created = await api(t, key, 'POST', '/api/v1/tables', { workspaceId, name: 'bench', schema: { columns: COLUMNS } });
    const tableId = (created.data.table as { id: string }).id;
    const loadMs = await time(() => load(db, tableId));

    const cols = 'id, data, position, created_at, updated_at';
    const scenarios: {
      name: string; qs: Record<string, unknown>; page: [string, unknown[]]; count?: [string, unknown[]]; expectTotal: (n: number) => boolean;
    }[] = [
      {
        name: 'equality',
        qs: { filter: { city: 'city_7' } },
        page: [`SELECT ${cols} FROM table_rows WHERE table_id = $1 AND data @> $2::jsonb ORDER BY position LIMIT 100`, [tableId, '{"city":"city_7"}']],
        count: ['SELECT count(*)::int AS n FROM table_rows WHERE table_id = $1 AND data @> $2::jsonb', [tableId, '{"city":"city_7"}']],
        expectTotal: (n) => n === ROWS / 50,
      },
      {
        name: 'rangeSort',
        qs: { filter: { age: { $gte: 30, $lt: 40 } }, sort: { score: 'desc' } },
        page: [`SELECT ${cols} FROM table_rows WHERE table_id = $1 AND (data->'age')::numeric >= $2 AND (data->'age')::numeric < $3
                 ORDER BY (data->'score')::numeric DESC NULLS LAST, position LIMIT 100`, [tableId, 30, 40]],
        count: [`SELECT count(*)::int AS n FROM table_rows WHERE table_id = $1 AND (data->'age')::numeric >= $2 AND (data->'age')::numeric < $3`, [tableId, 30, 40]],
        expectTotal: (n) => n > 15_000 && n < 18_000,
      },
      {
        name: 'offset',
        qs: { offset: 5000, limit: 100 },
        page: [`SELECT ${cols} FROM table_rows WHERE table_id = $1 ORDER BY position LIMIT 100 OFFSET 5000`, [tableId]],
        count: ['SELECT count(*)::int AS n FROM table_rows WHERE table_id = $1', [tableId]],
        expectTotal: (n) => n === ROWS,
      },
    ];

    const out: Record<string, number> = { rows: ROWS, loadMs: Math.round(loadMs), iterations };
    for (const s of scenarios) {
      const p = new URLSearchParams({ workspaceId });
      for (const [k, v] of Object.entries(s.qs)) p.set(k, typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v));
      const path = `/api/v1/tables/${tableId}/rows?${p.toString()}`;
      const check = await api(t, key, 'GET', path);
      const rows = check.data.rows as unknown[];
      if (!s.expectTotal(check.data.totalCount as number) || rows.length !== 100) {
        throw new Error(`${s.name}: unexpected answer totalCount=${String(check.data.totalCount)} rows=${rows.length}`);
      }
      const apiTimes: number[] = [];
      const rawTimes: number[] = [];
      const pageTimes: number[] = [];
      for (let i = 0; i < iterations + 20; i++) {
        const a = await time(() => api(t, key, 'GET', path));
        const r = await time(async () => {
          await db.query(s.page[0], s.page[1]);
          if (s.count) await db.query(s.count[0], s.count[1]);
        });
        const pg = await time(() => db.query(s.page[0], s.page[1]));
        if (i >= 20) {
          apiTimes.push(a);
          rawTimes.push(r);
          pageTimes.push(pg);
        }
      }
      const A = stats(apiTimes);
      const R = stats(rawTimes);
      const P = stats(pageTimes);
      out[`${s.name}.api.p50`] = A.p50;
      out[`${s.name}.api.p99`] = A.p99;
      out[`${s.name}.rawSql.p50`] = R.p50;
      out[`${s.name}.rawSql.p99`] = R.p99;
      out[`${s.name}.rawPageOnly.p50`] = P.p50;
      out[`${s.name}.rawPageOnly.p99`] = P.p99;
      out[`${s.name}.ratioP50`] = +(A.p50 / R.p50).toFixed(3);
      out[`${s.name}.ratioP50VsPageOnly`] = +(A.p50 / P.p50).toFixed(3);
    }
    return out;
  } finally {
    await t.close();
  }
}

await runIfMain(import.meta.url, 'tables-query', run);
