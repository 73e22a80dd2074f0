// sandbox-hostile: function code that ends its process with a V8 fatal out-of-memory error (a Map grown past the
// isolate's limit), run again and again, and what another workspace's function blocks see meanwhile. The
// isolates live in a sandbox process of their own (docs/architecture.md, "The sandbox process"): the server
// must answer every request, the hostile runs fail, and the other workspace's runs succeed, except one whose
// code was running in the process at the moment it stopped.
//
//   npm run bench -- sandbox-hostile [--bombs 5] [--seconds S]
//
// With --seconds, the bombs go on one after another for that long (however many that makes), which shows the
// workspace's budget of crashes: after two, its code is refused and the process no longer stops.
//
// Weft from dist/main.js as `compare` runs it (embedded, npm start's flags). Another workspace (made with the
// CLI) runs a workflow whose function block needs an isolate, one request after another, first alone (the
// baseline), then while the bombs run one after another. Reported: its answers by status and their latency
// either way, the bombs' statuses and latency, and that the server process is the same one at the end.
import { startEmbedded } from './compare-weft.js';
import { cleanupAll, installExitHandlers, sleep } from './compare-procs.js';
import { apiCall, latencySummary, round2, weftCli } from './support.js';

export const standalone = true;

const workflow = (code: string) => ({
  blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'code', type: 'function', name: 'Code', config: { code } }],
  edges: [{ from: 'start', to: 'code' }],
});

async function deploy(base: string, key: string, workspaceId: string, name: string, code: string): Promise<string> {
  const created = await apiCall(`${base}/api/v1/workflows`, key, 'POST', { workspaceId, name, definition: workflow(code) });
  if (created.status !== 201) throw new Error(`create ${name}: ${created.status} ${JSON.stringify(created.body)}`);
  const id = (created.body.data as { workflow: { id: string } }).workflow.id;
  const deployed = await apiCall(`${base}/api/v1/workflows/${id}/deploy`, key, 'POST');
  if (deployed.status !== 200) throw new Error(`deploy ${name}: ${deployed.status}`);
  return id;
}

/** Executes `url` one request after another until `until` settles: latency of each, and answers by status. */
async function executeWhile(url: string, key: string, until: Promise<unknown>) {
  let done = false;
  void until.finally(() => (done = true));
  const ms: number[] = [];
  const statuses: Record<number, number> = {};
  while (!done) {
    const t0 = performance.now();
    const r = await apiCall(url, key, 'POST', { inputs: {} });
    ms.push(performance.now() - t0);
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    await sleep(5);
  }
  return { ...latencySummary(ms), statuses };
}

export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const i = argv.indexOf('--bombs');
  const bombs = i >= 0 ? Number(argv[i + 1]) : 5;
  const j = argv.indexOf('--seconds');
  const attackMs = j >= 0 ? Number(argv[j + 1]) * 1000 : 0;
  installExitHandlers();
  try {
    const w = await startEmbedded('http://127.0.0.1:9/v1', true);
    const serverPid = w.api().child.pid;
    const other = await weftCli<{ id: string }>(w.dataDir ?? '', ['workspaces', 'create', '--name', 'other']);
    const otherKey = await weftCli<{ secret?: string; key?: string }>(w.dataDir ?? '', ['keys', 'create', '--workspace', other.id]);
    const key2 = otherKey.secret ?? otherKey.key ?? '';
    // A callback is outside pure code: each run needs an isolate.
    const normal = await deploy(w.url, key2, other.id, 'normal', 'return [21].map((n) => n * 2)[0]');
    const bomb = await deploy(w.url, w.apiKey, w.workspaceId, 'bomb', 'const m = new Map(); for (let i = 0; ; i++) m.set(i, i);');
    const normalUrl = `${w.url}/api/workflows/${normal}/execute`;
    await apiCall(normalUrl, key2, 'POST', { inputs: {} }); // the sandbox process started
    const alone = await executeWhile(normalUrl, key2, sleep(2000));
    const bombRuns: { status: number; ms: number; error?: string }[] = [];
    const attack = (async () => {
      const began = performance.now();
      for (let b = 0; attackMs > 0 ? performance.now() - began < attackMs : b < bombs; b++) {
        const t0 = performance.now();
        const r = await apiCall(`${w.url}/api/workflows/${bomb}/execute`, w.apiKey, 'POST', { inputs: {} });
        bombRuns.push({ status: r.status, ms: round2(performance.now() - t0), error: typeof r.body.error === 'string' ? r.body.error.slice(0, 80) : undefined });
      }
    })();
    const during = await executeWhile(normalUrl, key2, attack);
    const after = await apiCall(normalUrl, key2, 'POST', { inputs: {} });
    const sameServer = w.api().child.pid === serverPid && w.api().child.exitCode === null;
    await w.close();
    // By what each bomb's run said: the process stopped under it, or its code was refused (the budget).
    const bombOutcomes: Record<string, number> = {};
    for (const r of bombRuns) {
      const kind = r.error?.includes('sandbox process stopped') ? 'stoppedTheProcess' : r.error?.includes('refused') ? 'refused' : `status ${r.status}`;
      bombOutcomes[kind] = (bombOutcomes[kind] ?? 0) + 1;
    }
    return {
      bombs: bombRuns.length, attackSeconds: attackMs / 1000, sameServer, otherWorkspaceAlone: alone, otherWorkspaceDuring: during,
      otherWorkspaceAfter: after.status, bombOutcomes, bombRuns: bombRuns.slice(0, 10),
    };
  } finally {
    await cleanupAll();
  }
}
