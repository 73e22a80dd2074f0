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
 * Then the long-spaces attack (audit 4): two 1 MB .txt files, each one line of a million spaces then "x",
 * and right after them another workspace's small document: how long until that document is ready (while both
 * workers might be held by the hostile ones), and until the hostile ones are. Polled for at most
 * KB_HOSTILE_WAIT_S seconds (default 120; the code before the fix needed about 17 minutes a file).
 *
 * Needs a current build: `npm run build && npm run bench -- knowledge-hostile`. PGlite unless
 * WEFT_TEST_DB=postgres with TEST_DATABASE_URL. KB_HOSTILE_ATTACKS=spaces (a comma list of docx, bombs, pdf,
 * csv, spaces) runs only those.
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
    const only = process.env.KB_HOSTILE_ATTACKS?.split(',').map((a) => a.trim());
    const wanted = (group: string) => !only || only.includes(group);
    const group = (name: string) => (name.startsWith('bomb') ? 'bombs' : name.split('.')[1] ?? name);
    const results: Record<string, unknown>[] = [];
    for (const [name, make] of attacks) {
      if (wanted(name === 'paragraphs.docx' ? 'docx' : group(name))) results.push(await attack(server.url, baseId, workspaceId, h, [[name, make()]], flowId, other, pid));
    }
    // Three bombs at once (the 6 GB case).
    if (wanted('bombs')) {
      results.push(await attack(server.url, baseId, workspaceId, h, [
        ['bomb1.docx', zerosBomb('docx', 2 * GiB)], ['bomb2.xlsx', zerosBomb('xlsx', 2 * GiB, 4096)], ['bomb3.docx', zerosBomb('docx', 2 * GiB, 4096)],
      ], flowId, other, pid));
    }
    if (wanted('spaces')) results.push(await spacesAttack(server.url, { baseId, workspaceId, h }, { workspaceId: ws.id, h: other }));
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

interface Tenant { workspaceId: string; h: Record<string, string>; baseId?: string }

/** Two files of a million spaces then "x" in one upload, then another workspace's small document. */
async function spacesAttack(url: string, hostile: Tenant, victim: Tenant): Promise<Record<string, unknown>> {
  const waitMs = Number(process.env.KB_HOSTILE_WAIT_S ?? 120) * 1000;
  const spaces = Buffer.from(`start ${' '.repeat(1_000_000)}x\n`);
  const form = new FormData();
  form.set('workspaceId', hostile.workspaceId);
  for (const name of ['spaces1.txt', 'spaces2.txt']) form.append('file', new Blob([spaces]), name);
  const began = performance.now();
  const up = await fetch(`${url}/api/v1/knowledge/${hostile.baseId}/documents`, { method: 'POST', body: form, headers: hostile.h });
  const hostileIds = ((await up.json()) as { data: { documents: { id: string }[] } }).data.documents.map((d) => d.id);
  const victimBase = (await request(`${url}/api/v1/knowledge`, 'POST', { workspaceId: victim.workspaceId, name: `victim ${Date.now()}` }, victim.h)).body.data.knowledgeBase.id as string;
  const victimStart = performance.now();
  const small = await request(`${url}/api/v1/knowledge/${victimBase}/documents`, 'POST', {
    workspaceId: victim.workspaceId, filename: 'small.md', content: '# Small\n\nAnother workspace\'s small document.',
  }, victim.h);
  const victimId: string = small.body.data.document.id;
  const ready = new Map<string, number>();
  const pollErrors = new Map<number, number>();
  const docs: [string, Tenant & { baseId: string }][] = [
    ...hostileIds.map((id): [string, Tenant & { baseId: string }] => [id, { ...hostile, baseId: hostile.baseId as string }]),
    [victimId, { ...victim, baseId: victimBase }],
  ];
  while (ready.size < docs.length && performance.now() - began < waitMs) {
    for (const [id, owner] of docs) {
      if (ready.has(id)) continue;
      const r = await request(`${url}/api/v1/knowledge/${owner.baseId}/documents/${id}?workspaceId=${owner.workspaceId}`, 'GET', undefined, owner.h);
      if (r.status !== 200) {
        pollErrors.set(r.status, (pollErrors.get(r.status) ?? 0) + 1);
        continue;
      }
      const status = r.body.data.document.processingStatus;
      if (status === 'completed' || status === 'failed') ready.set(id, performance.now());
    }
    // Every 100 ms at first, then every second: a long wait must stay under the API rate limit (429s).
    await new Promise((r) => setTimeout(r, performance.now() - began < 10_000 ? 100 : 1000));
  }
  const after = (id: string, from: number) => (ready.has(id) ? Math.round((ready.get(id) as number) - from) : `not ready after ${waitMs / 1000} s`);
  // Cleanup; before the fix a deleted document's parse went on, so this only stops new work.
  for (const id of hostileIds) await request(`${url}/api/v1/knowledge/${hostile.baseId}/documents/${id}?workspaceId=${hostile.workspaceId}`, 'DELETE', undefined, hostile.h);
  return {
    files: ['spaces1.txt, spaces2.txt (1.0 MB each)', 'then small.md of another workspace'],
    otherWorkspaceDocumentReadyMs: after(victimId, victimStart),
    hostileReadyMs: hostileIds.map((id) => after(id, began)),
    ...(pollErrors.size > 0 ? { pollErrors: Object.fromEntries(pollErrors) } : {}),
  };
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

await runIfMain(import.meta.url, 'knowledge-hostile', run);
