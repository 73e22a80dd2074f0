// Changing a column of a large table, and what it costs the other tenants:
//   npm run build
//   npm run bench -- table-columns [--rows 50000]
// One `weft serve` on a fresh data directory (limits off, embedded database), as in `compare`. A table of
// `--rows` rows (a text column of numbers, a label, a number) is filled 1,000 rows a request; then each
// operation below runs once while another client polls /healthz and reads a small table of another workspace
// every 20 ms: its time, and the worst latency the other client saw during it, beside that client's worst
// latency over the same span before any operation (the baseline of the moment). These rewrite every row in one
// transaction, so on the embedded database they hold every tenant's statements for as long as they run; the
// workspace's budget of database time bounds how often one tenant can do so (docs/architecture.md, Tables:
// bounded statements).
import { parseArgs } from 'node:util';
import { cleanupAll, firstJsonLine, installExitHandlers, request, start } from './compare-procs.js';
import { assertBuilt, startEmbedded } from './compare-weft.js';

/** bench/run.ts: this scenario starts its own servers and needs no test database templates. */
export const standalone = true;

export async function run(argv: string[] = process.argv.slice(3)): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args: argv, options: { rows: { type: 'string', default: '50000' } }, strict: true });
  const rows = Number(values.rows);
  if (!Number.isInteger(rows) || rows < 1000) throw new Error('--rows must be an integer >= 1000');
  assertBuilt();
  installExitHandlers();
  try {
    const upstream = start('upstream', process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', 'upstream']);
    const { port } = await firstJsonLine<{ port: number }>(upstream);
    const weft = await startEmbedded(`http://127.0.0.1:${port}/v1`, false);
    const headers = { 'x-api-key': weft.apiKey };
    const ws = weft.workspaceId;
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await request(method, `${weft.url}${path}`, headers, body);
      if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
      return r.json() as { data: Record<string, unknown> };
    };
    const created = await call('POST', '/api/v1/tables', {
      workspaceId: ws, name: 'big', schema: { columns: [{ name: 'amount', type: 'string' }, { name: 'label', type: 'string' }, { name: 'n', type: 'number' }] },
    });
    const id = (created.data.table as { id: string }).id;
    const small = (await call('POST', '/api/v1/tables', { workspaceId: ws, name: 'small', schema: { columns: [{ name: 'x', type: 'number' }] } })).data.table as { id: string };
    await call('POST', `/api/v1/tables/${small.id}/rows`, { workspaceId: ws, data: { x: 1 } });
    const fillStart = performance.now();
    for (let first = 0; first < rows; first += 1000) {
      const batch = Array.from({ length: Math.min(1000, rows - first) }, (_, i) => ({ amount: String(first + i), label: `row ${first + i}`, n: first + i }));
      await call('POST', `/api/v1/tables/${id}/rows`, { workspaceId: ws, rows: batch });
    }
    const fillMs = performance.now() - fillStart;
    const firstRow = ((await call('GET', `/api/v1/tables/${id}/rows?workspaceId=${ws}&limit=1`)).data.rows as { id: string }[])[0];

    /** Runs `op` while another client reads every 20 ms; answers its time and that client's worst latency. */
    const during = async (op: () => Promise<unknown>) => {
      let done = false;
      let worst = 0;
      const reader = (async () => {
        while (!done) {
          const t0 = performance.now();
          await request('GET', `${weft.url}/healthz`);
          await request('GET', `${weft.url}/api/v1/tables/${small.id}/rows?workspaceId=${ws}&limit=1`, headers);
          worst = Math.max(worst, performance.now() - t0);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const t0 = performance.now();
      await op();
      const ms = performance.now() - t0;
      done = true;
      await reader;
      return { ms: Math.round(ms), otherClientWorstMs: Math.round(worst) };
    };
    const columns = (name: string, updates: Record<string, unknown>) =>
      call('PATCH', `/api/v1/tables/${id}/columns`, { workspaceId: ws, columnName: name, updates });
    const baseline = await during(() => new Promise((r) => setTimeout(r, 2000)));
    const results = {
      rename: await during(() => columns('label', { name: 'title' })),
      retypeTextToNumber: await during(() => columns('amount', { type: 'number' })),
      makeUnique: await during(() => columns('n', { unique: true })),
      deleteColumn: await during(() => call('DELETE', `/api/v1/tables/${id}/columns`, { workspaceId: ws, columnName: 'title' })),
      insertBeforeFirstRow: await during(() => call('POST', `/api/v1/tables/${id}/rows`, { workspaceId: ws, data: { amount: 1, n: -1 }, beforeRowId: firstRow.id })),
    };
    return { rows, fillSeconds: Math.round(fillMs / 100) / 10, idleBaseline: baseline, ...results };
  } finally {
    await cleanupAll();
  }
}
