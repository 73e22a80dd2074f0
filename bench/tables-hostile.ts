// tables-hostile: what a table query built to be slow does to everyone else's requests. On the embedded
// database one statement runs at a time and cannot be interrupted, so a statement's cost must be bounded
// before it starts (docs/architecture.md, Tables: bounded statements). The attacks are filters that are
// cheap to send but whose cost per row grows with the operand: a long substring against cells built to
// make a naive match retry at every position, and a JSON array needle against a long JSON array cell.
//
//   npm run bench -- tables-hostile [--rows 200] [--only <part of an attack's name>]
//
// Weft from dist/main.js as `compare` runs it (embedded, npm start's flags; WEFT_QUERY_TIMEOUT_MS and other WEFT_
// variables are passed through). One table of `rows` rows, each a
// 10,000-character string of one letter and a JSON array of 10,000 numbers (about 60 KB a row). For each
// attack: its status and latency, and meanwhile, another workspace (made with the CLI) reading its one-row
// table in a loop (a request that needs the database): its p50 and worst latency, against the same loop with
// nothing else running. The last attack sends ten plain scans at once.
import { startEmbedded } from './compare-weft.js';
import { cleanupAll, installExitHandlers, sleep } from './compare-procs.js';
import { apiCall as call, latencySummary, pollWhile, round2, weftCli } from './support.js';

export const standalone = true;


export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const i = argv.indexOf('--rows');
  const rows = i >= 0 ? Number(argv[i + 1]) : 200;
  const o = argv.indexOf('--only');
  const only = o >= 0 ? argv[o + 1] : undefined;
  installExitHandlers();
  try {
    const w = await startEmbedded('http://127.0.0.1:9/v1', false);
    const api = (method: string, path: string, body?: unknown) => call(`${w.url}${path}`, w.apiKey, method, body);
    const ws = w.workspaceId;
    const big = await api('POST', '/api/v1/tables', {
      workspaceId: ws, name: 'hostile', schema: { columns: [{ name: 's', type: 'string' }, { name: 'j', type: 'json' }] },
    });
    const bigId = (big.body.data as { table: { id: string } }).table.id;
    const row = { s: 'a'.repeat(10_000), j: Array.from({ length: 10_000 }, (_, n) => n) };
    for (let done = 0; done < rows; done += 50) {
      const batch = Array.from({ length: Math.min(50, rows - done) }, () => row);
      const r = await api('POST', `/api/v1/tables/${bigId}/rows`, { workspaceId: ws, rows: batch });
      if (r.status !== 200) throw new Error(`insert answered ${r.status}: ${JSON.stringify(r.body)}`);
    }
    // The other tenant: a workspace and key of its own, and a one-row table.
    const other = await weftCli<{ id: string }>(w.dataDir ?? '', ['workspaces', 'create', '--name', 'other']);
    const otherKey = (await weftCli<{ secret?: string; key?: string }>(w.dataDir ?? '', ['keys', 'create', '--workspace', other.id]));
    const key2 = otherKey.secret ?? otherKey.key ?? '';
    const small = await call(`${w.url}/api/v1/tables`, key2, 'POST', { workspaceId: other.id, name: 'small', schema: { columns: [{ name: 'n', type: 'number' }] } });
    if (small.status !== 200) throw new Error(`the other workspace's table: ${small.status} ${JSON.stringify(small.body)}`);
    const smallId = (small.body.data as { table: { id: string } }).table.id;
    await call(`${w.url}/api/v1/tables/${smallId}/rows`, key2, 'POST', { workspaceId: other.id, data: { n: 1 } });
    const pollUrl = `${w.url}/api/v1/tables/${smallId}/rows?workspaceId=${other.id}`;

    const query = (filter: unknown) => `/api/v1/tables/${bigId}/rows?workspaceId=${ws}&limit=1&filter=${encodeURIComponent(JSON.stringify(filter))}`;
    const attacks: [string, string][] = [
      ['plain scan ($ne on every row)', query({ s: { $ne: 'b' } })],
      ['$contains, 255 a then b', query({ s: { $contains: `${'a'.repeat(255)}b` } })],
      ['$contains, 5,000 a then b', query({ s: { $contains: `${'a'.repeat(5000)}b` } })],
      ['$endsWith, 255 a then b', query({ s: { $endsWith: `${'a'.repeat(255)}b` } })],
      ['six $contains of 256 in $or', query({ $or: Array.from({ length: 6 }, (_, n) => ({ s: { $contains: `${'a'.repeat(255)}${'bcdefg'[n]}` } })) })],
      ['json $contains, 8 numbers', query({ j: { $contains: Array.from({ length: 8 }, (_, n) => 9_999 - n) } })],
      ['json $contains, 32 numbers', query({ j: { $contains: Array.from({ length: 32 }, (_, n) => 9_999 - n) } })],
      ['json $contains, 2,000 numbers', query({ j: { $contains: Array.from({ length: 2000 }, (_, n) => 9_999 - n) } })],
      ['$nin of 1,000 strings', query({ s: { $nin: Array.from({ length: 1000 }, (_, n) => `v${n}`) } })],
      ['200 $ne conditions in $and', query({ $and: Array.from({ length: 200 }, (_, n) => ({ s: { $ne: `v${n}` } })) })],
    ].filter(([name]) => only === undefined || name.includes(only)) as [string, string][];
    const results: Record<string, unknown>[] = [];
    const alone = latencySummary(await pollWhile(pollUrl, sleep(1000), { 'x-api-key': key2 }));
    // The other tenant's reads are counted by status: a scan stopped past WEFT_QUERY_TIMEOUT_MS restarts the
    // embedded database, and the reads queued behind it are answered 503 (docs/architecture.md, Tables: bounded statements).
    for (const [name, path] of attacks) {
      const t0 = performance.now();
      const attack = api('GET', path).then((r) => ({ status: r.status, ms: round2(performance.now() - t0), error: r.status === 200 ? undefined : r.body.error }));
      const statuses: Record<number, number> = {};
      const during = latencySummary(await pollWhile(pollUrl, attack, { 'x-api-key': key2 }, statuses));
      results.push({ attack: name, ...(await attack), readsOfAnotherTableDuring: { ...during, statuses } });
    }
    if (only === undefined || 'ten plain scans at once'.includes(only)) {
      const t0 = performance.now();
      const scans = Promise.all(Array.from({ length: 10 }, () => api('GET', query({ s: { $ne: 'b' } }))));
      const statuses: Record<number, number> = {};
      const during = latencySummary(await pollWhile(pollUrl, scans, { 'x-api-key': key2 }, statuses));
      const answered = (await scans).map((r) => r.status);
      results.push({
        attack: 'ten plain scans at once', status: [...new Set(answered)].join(','), ms: round2(performance.now() - t0), readsOfAnotherTableDuring: { ...during, statuses },
      });
    }
    await w.close();
    return { rows, rowKb: round2(JSON.stringify(row).length / 1024), readsOfAnotherTableAlone: alone, attacks: results };
  } finally {
    await cleanupAll();
  }
}
