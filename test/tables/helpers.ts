import { createKey, createWorkspace } from '../support/accounts.js';
import { request, type TestResponse, type TestServer } from '../support/harness.js';

/** Small helpers over the tables HTTP API for the suites in this folder. */
export class TablesClient {
  constructor(readonly t: TestServer, readonly workspaceId = t.workspaceId, readonly key = t.apiKey) {}

  call(method: string, path: string, body?: unknown): Promise<TestResponse> {
    return request(this.t.url + path, method, body, { 'x-api-key': this.key });
  }

  async createTable(name: string, columns: unknown[], extra: Record<string, unknown> = {}): Promise<string> {
    const r = await this.call('POST', '/api/v1/tables', { workspaceId: this.workspaceId, name, schema: { columns }, ...extra });
    if (r.status !== 200) throw new Error(`create table ${name}: ${r.status} ${r.text}`);
    return r.body.data.table.id as string;
  }

  insert(tableId: string, data: Record<string, unknown>): Promise<TestResponse> {
    return this.call('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: this.workspaceId, data });
  }

  insertMany(tableId: string, rows: Record<string, unknown>[]): Promise<TestResponse> {
    return this.call('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: this.workspaceId, rows });
  }

  query(tableId: string, q: { filter?: unknown; sort?: unknown; limit?: number | string; offset?: number | string; raw?: string } = {}): Promise<TestResponse> {
    const p = new URLSearchParams({ workspaceId: this.workspaceId });
    if (q.filter !== undefined) p.set('filter', typeof q.filter === 'string' ? q.filter : JSON.stringify(q.filter));
    if (q.sort !== undefined) p.set('sort', typeof q.sort === 'string' ? q.sort : JSON.stringify(q.sort));
    if (q.limit !== undefined) p.set('limit', String(q.limit));
    if (q.offset !== undefined) p.set('offset', String(q.offset));
    return this.call('GET', `/api/v1/tables/${tableId}/rows?${p.toString()}${q.raw ?? ''}`);
  }

  /** All rows in table order (data only). */
  async all(tableId: string): Promise<Record<string, unknown>[]> {
    const r = await this.query(tableId, { limit: 1000 });
    if (r.status !== 200) throw new Error(`query: ${r.status} ${r.text}`);
    return r.body.data.rows.map((x: { data: Record<string, unknown> }) => x.data);
  }

  async table(tableId: string): Promise<Record<string, any>> {
    const r = await this.call('GET', `/api/v1/tables/${tableId}?workspaceId=${this.workspaceId}`);
    if (r.status !== 200) throw new Error(`get table: ${r.status} ${r.text}`);
    return r.body.data.table;
  }

  /** Row count and stored bytes straight from the database, for "nothing written" checks. */
  async snapshot(tableId: string): Promise<{ rows: number; bytes: number; counter: number; data: string }> {
    const db = this.t.server.ctx.db;
    const [c] = await db.query<{ n: number; b: number; data: string }>(
      "SELECT count(*)::int AS n, COALESCE(sum(bytes), 0)::int AS b, COALESCE(string_agg(id || data::text || updated_at::text, ',' ORDER BY position), '') AS data FROM table_rows WHERE table_id = $1",
      [tableId],
    );
    const [t] = await db.query<{ row_count: number }>('SELECT row_count FROM tables WHERE id = $1', [tableId]);
    return { rows: c.n, bytes: c.b, counter: t?.row_count ?? -1, data: c.data };
  }
}

let counter = 0;
/** A second workspace with its own workspace key (for foreign-id tests). */
export async function otherWorkspace(t: TestServer, plan = 'free'): Promise<TablesClient> {
  const ws = await createWorkspace(t.server.ctx.db, `tables-other-${process.pid}-${++counter}-${Date.now()}`, t.userId, plan);
  const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
  return new TablesClient(t, ws.id, key.secret);
}

export const uniqueName = (prefix: string) => `${prefix}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;
