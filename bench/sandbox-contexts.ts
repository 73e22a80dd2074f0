// `npm run bench -- sandbox-contexts [--seconds N] [--rounds N]`: sync execute on the spec's answer path
// (start -> function, `{ "inputs": ... }`, the envelope with `limits`) with a fresh V8 context per run
// (WEFT_SANDBOX_CONTEXTS=fresh, the default) against contexts reused per workspace (`workspace`), in one
// sitting: two embedded `weft serve` processes side by side, loaded in alternating order each round, with
// a bare Fastify hello-world (its own process) and the same workflow without its function block (what a run
// costs without user code) as baselines. Prints req/s, p99, the ratio to hello-world and the server's CPU
// per request (all its threads, from /proc) for each. Then, in this process, what one new context costs on an
// isolate, plain (a fresh context) and hardened (what `workspace` pays when a workspace has no idle context):
// CPU and wall ms per context created and released. docs/architecture.md, "Sandbox contexts".
import { parseArgs } from 'node:util';
import ivm from 'isolated-vm';
import { HARDEN_SOURCE } from '../src/sandbox/harden.js';
import { cleanupAll, cpuMs, firstJsonLine, installExitHandlers, start, type Proc } from './compare-procs.js';
import { assertBuilt, deployWorkflow, startEmbedded, syncPaths, type SyncPath, type Weft } from './compare-weft.js';
import { load, machine } from './support.js';

export const standalone = true;

const modes = ['fresh', 'workspace'] as const;
type Mode = (typeof modes)[number];

interface Figures { rps: number; p99: number; ofHello: string; cpuMsPerRequest?: number; errors: number }

async function measure(w: Weft, workflowId: string, path: SyncPath, seconds: number, helloRps: number): Promise<Figures> {
  const pid = w.api().child.pid;
  const before = cpuMs(pid);
  const r = await load(`${w.url}/api/workflows/${workflowId}/execute`, {
    connections: 10, seconds, method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': w.apiKey }, body: JSON.stringify(syncPaths[path].body),
  });
  const after = cpuMs(pid);
  const cpu = before && after && r.requests > 0 ? +((after.totalMs - before.totalMs) / r.requests).toFixed(2) : undefined;
  return { rps: r.rps, p99: r.p99, ofHello: `1/${(helloRps / Math.max(1, r.rps)).toFixed(1)}`, cpuMsPerRequest: cpu, errors: r.errors + r.non2xx };
}

/** CPU and wall ms per context created (and hardened) and released, on one warm isolate, alternated twice. */
async function contextCosts(count = 300): Promise<Record<string, { cpuMs: number; wallMs: number }[]>> {
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  try {
    const harden = await isolate.compileScript(HARDEN_SOURCE);
    const out: Record<string, { cpuMs: number; wallMs: number }[]> = { plain: [], hardened: [] };
    for (const kind of ['plain', 'hardened', 'plain', 'hardened'] as const) {
      const cpu0 = process.cpuUsage();
      const wall0 = performance.now();
      for (let i = 0; i < count; i++) {
        const context = await isolate.createContext();
        if (kind === 'hardened') await harden.run(context);
        context.release();
      }
      const cpu = process.cpuUsage(cpu0);
      out[kind].push({ cpuMs: +((cpu.user + cpu.system) / 1000 / count).toFixed(2), wallMs: +((performance.now() - wall0) / count).toFixed(2) });
    }
    return out;
  } finally {
    isolate.dispose();
  }
}

export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args: argv, options: { seconds: { type: 'string', default: '6' }, rounds: { type: 'string', default: '3' } } });
  const seconds = Number(values.seconds);
  const rounds = Number(values.rounds);
  assertBuilt();
  installExitHandlers();
  try {
    const helloProc: Proc = start('hello-world', process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', 'hello']);
    const hello = `http://127.0.0.1:${(await firstJsonLine<{ port: number }>(helloProc)).port}/`;
    const servers = {} as Record<Mode, { w: Weft; spec: string; noCode: string }>;
    for (const mode of modes) {
      process.env.WEFT_SANDBOX_CONTEXTS = mode; // passed through to the server (compare-weft.ts)
      const w = await startEmbedded('http://127.0.0.1:9');
      servers[mode] = { w, spec: await deployWorkflow(w, 'contexts-spec', 'spec'), noCode: await deployWorkflow(w, 'contexts-no-code', 'noCode') };
    }
    // Warm both servers (JIT, heaps, the sandbox pool and, in `workspace` mode, its idle contexts).
    for (const mode of modes) await measure(servers[mode].w, servers[mode].spec, 'spec', 8, 1);
    await measure(servers.fresh.w, servers.fresh.noCode, 'noCode', 3, 1);

    const table: Record<string, unknown>[] = [];
    for (let round = 1; round <= rounds; round++) {
      const helloRps = (await load(hello, { connections: 10, seconds: 3 })).rps;
      const row: Record<string, unknown> = { round, helloRps };
      for (const mode of round % 2 === 1 ? modes : [...modes].reverse()) row[mode] = await measure(servers[mode].w, servers[mode].spec, 'spec', seconds, helloRps);
      row.noUserCode = await measure(servers.fresh.w, servers.fresh.noCode, 'noCode', seconds, helloRps);
      table.push(row);
      process.stderr.write(`${JSON.stringify(row)}\n`);
    }
    await cleanupAll(); // the servers stop first: the context timing below runs in this process
    return { machine: machine(), seconds, rounds: table, newContext: await contextCosts() };
  } finally {
    await cleanupAll();
  }
}
