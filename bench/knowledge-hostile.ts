import fs from 'node:fs';
import { connectDatabase } from '../src/db/connect.js';
import { createKey, createWorkspace } from '../test/support/accounts.js';
import { freePort, spawnServer } from '../test/support/cli.js';
import { bootstrappedDatabase, request } from '../test/support/harness.js';
import { bigCsv, bigParagraphsDocx, manyPagePdf, zerosBomb } from '../test/knowledge/hostile-files.js';
import { machine, percentile, runIfMain } from './support.js';

/**
 * knowledge-hostile: the attacks of issue 28 against a real `weft serve` (the build in dist/, spawned on a
 * fresh database, default configuration). For each hostile upload: how long the upload request took, how
 * long until the document was `failed` (and why), and while it was being ingested, every 100 ms one
 * `/healthz` and one trivial run of another workspace (start -> function, sync execute), one after the
 * other: their worst and median latency, and the server process's peak resident memory (VmRSS sampled
 * from /proc with each probe; worker threads share the process, so their heaps are in it).
 *
 * Needs a current build: `npm run build && npm run bench -- knowledge-hostile`. PGlite unless
 * WEFT_TEST_DB=postgres with TEST_DATABASE_URL.
 */

const GiB = 1024 ** 3;

interface Probe { healthMs: number[]; runMs: number[]; rssMb: number[]; failures: number }

export async function run(): Promise<Record<string, unknown>> {
  const { workspaceId, apiKey, userId, env, where } = await bootstrappedDatabase();
  // The other tenant: its own workspace, key and deployed workflow.
  const db = await connectDatabase({ dataDir: where.dataDir ?? '', databaseUrl: where.databaseUrl });
  const ws = await createWorkspace(db, 'tenant-b', userId, 'enterprise');
  const otherKey = (await createKey(db, { workspaceId: ws.id, userId, type: 'workspace' })).secret;
  await db.close();

  const server = await spawnServer({ ...env, WEFT_DEFAULT_PLAN: 'enterprise' }, await freePort());
  const pid = server.child.pid as number;
  const h = { 'x-api-key': apiKey };
  const other = { 'x-api-key': otherKey };
  try {
    const flow = await request(`${server.url}/api/v1/workflows`, 'POST', {
      workspaceId: ws.id, name: 'trivial',
      definition: { blocks: [{ id: 'start', type: 'start', name: 'Start', config: { inputFormat: [] } }, { id: 'f', type: 'function', name: 'F', config: { code: 'return { ok: 1 }' } }], edges: [{ from: 'start', to: 'f' }] },
    }, other);
    const flowId: string = flow.body.data.workflow.id;
    await request(`${server.url}/api/v1/workflows/${flowId}/deploy`, 'POST', undefined, other);
    const kb = await request(`${server.url}/api/v1/knowledge`, 'POST', { workspaceId, name: 'hostile' }, h);
    const baseId: string = kb.body.data.knowledgeBase.id;

    const attacks: [string, () => Buffer][] = [
      ['paragraphs.docx', () => bigParagraphsDocx(1_800_000)],
      ['bomb.docx', () => zerosBomb('docx', 2 * GiB)],
      ['bomb.xlsx', () => zerosBomb('xlsx', 2 * GiB, 4096)],
      ['pages.pdf', () => manyPagePdf(5000)],
      ['rows.csv', () => bigCsv(1_000_000)],
    ];
    const results: Record<string, unknown>[] = [];
    for (const [name, make] of attacks) results.push(await attack(server.url, baseId, workspaceId, h, [[name, make()]], flowId, other, pid));
    // Three bombs at once (the 6 GB case).
    results.push(await attack(server.url, baseId, workspaceId, h, [
      ['bomb1.docx', zerosBomb('docx', 2 * GiB)], ['bomb2.xlsx', zerosBomb('xlsx', 2 * GiB, 4096)], ['bomb3.docx', zerosBomb('docx', 2 * GiB, 4096)],
    ], flowId, other, pid));
    const alive = (await fetch(`${server.url}/healthz`)).status === 200;
    return { machine: machine(), load: fs.readFileSync('/proc/loadavg', 'utf8').trim(), serverAliveAfter: alive, attacks: results };
  } finally {
    server.child.kill('SIGKILL');
  }
}

async function attack(
  url: string, baseId: string, workspaceId: string, h: Record<string, string>, files: [string, Buffer][],
  flowId: string, other: Record<string, string>, pid: number,
): Promise<Record<string, unknown>> {
  const form = new FormData();
  form.set('workspaceId', workspaceId);
  for (const [name, bytes] of files) form.append('file', new Blob([bytes]), name);
  const began = performance.now();
  const up = await fetch(`${url}/api/v1/knowledge/${baseId}/documents`, { method: 'POST', body: form, headers: h });
  const uploadMs = Math.round(performance.now() - began);
  const ids = ((await up.json()) as { data: { documents: { id: string }[] } }).data.documents.map((d) => d.id);
  const probe: Probe = { healthMs: [], runMs: [], rssMb: [], failures: 0 };
  const outcome = new Map<string, { status: string; error: string | null }>();
  const deadline = Date.now() + 600_000;
  while (outcome.size < ids.length && Date.now() < deadline) {
    const t0 = performance.now();
    const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
    const t1 = performance.now();
    const run = await fetch(`${url}/api/workflows/${flowId}/execute`, {
      method: 'POST', headers: { ...other, 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(30_000),
    }).catch(() => undefined);
    const t2 = performance.now();
    if (health?.status !== 200 || run?.status !== 200) probe.failures++;
    probe.healthMs.push(t1 - t0);
    probe.runMs.push(t2 - t1);
    probe.rssMb.push(rssMb(pid));
    for (const id of ids) {
      if (outcome.has(id)) continue;
      const d = (await request(`${url}/api/v1/knowledge/${baseId}/documents/${id}?workspaceId=${workspaceId}`, 'GET', undefined, h)).body.data.document;
      if (d.processingStatus === 'failed' || d.processingStatus === 'completed') outcome.set(id, { status: d.processingStatus, error: d.processingError ?? null });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
  const round = (n: number) => Math.round(n);
  return {
    files: files.map(([name, bytes]) => `${name} (${(bytes.length / 1e6).toFixed(1)} MB)`),
    uploadMs,
    doneMs: round(performance.now() - began),
    outcomes: [...outcome.values()],
    probes: probe.healthMs.length,
    probeFailures: probe.failures,
    healthzMs: { p50: round(percentile(sorted(probe.healthMs), 50)), max: round(Math.max(...probe.healthMs)) },
    otherRunMs: { p50: round(percentile(sorted(probe.runMs), 50)), max: round(Math.max(...probe.runMs)) },
    peakRssMb: Math.max(...probe.rssMb),
  };
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

await runIfMain(import.meta.url, 'knowledge-hostile', run);
