// step-overhead: a chain of 40 function blocks through runWorkflow with the real sandbox.
// Reports ms per step (p50 over the runs, after warm-up) beside two baselines measured in the same
// process: the bare sandbox call (same code, no engine) and the engine alone (an instant
// in-memory sandbox, so only scheduling, references, trace and step bookkeeping are counted).
// `stepMsP50` uses a sandbox with a fresh V8 context per call (context creation, about 0.3 ms here,
// dominates); `stepMsP50ContextPerRun` one context per run, as the server's sandbox does. Both with pure code
// off, since the steps' code is pure; `stepMsP50PureCode` is the server's configuration, where it is evaluated
// without a context (docs/architecture.md, "Pure code").
import { pathToFileURL } from 'node:url';
import { compile, realClock, runWorkflow, type EnginePorts, type SandboxPort, type WorkflowDefinition } from '../src/engine/index.js';
import { GuardedHttp } from '../src/net/guarded-http.js';
import { IsolatedVmSandbox } from '../src/sandbox/isolated-vm.js';

const STEPS = 40;
const RUNS = 200;
const WARMUP = 30;

function chain(): WorkflowDefinition {
  const blocks: WorkflowDefinition['blocks'] = [
    { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'n', type: 'number', default: 0 }] } },
  ];
  const edges: WorkflowDefinition['edges'] = [];
  let prev = 'start';
  let prevRef = '<start.n>';
  for (let i = 1; i <= STEPS; i++) {
    const id = `f${i}`;
    blocks.push({ id, type: 'function', name: `F${i}`, config: { code: `return ${prevRef} + 1;` } });
    edges.push({ from: prev, to: id });
    prev = id;
    prevRef = `<f${i}>`;
  }
  return { name: 'step-overhead', blocks, edges };
}

function p50(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

async function timeRuns(ports: EnginePorts, withSteps: boolean): Promise<number[]> {
  const graph = compile(chain());
  const perStep: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const steps: unknown[] = [];
    const t0 = process.hrtime.bigint();
    const r = await runWorkflow(graph, {
      input: { n: i },
      ports,
      ...(withSteps ? { onStep: async (s) => { steps.push(s); } } : {}),
    });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status !== 'completed' || r.output !== i + STEPS) throw new Error(`unexpected result: ${r.status} ${JSON.stringify(r.output)} ${r.error?.message ?? ''}`);
    if (i >= WARMUP) perStep.push(ms / STEPS);
  }
  return perStep;
}

export async function run(): Promise<Record<string, number>> {
  const sandbox = new IsolatedVmSandbox({ pureCode: false });
  const perRun = new IsolatedVmSandbox({ contextPerRun: true, pureCode: false });
  const server = new IsolatedVmSandbox({ contextPerRun: true });
  const http = new GuardedHttp();
  try {
    // Baseline 1: the bare sandbox call, same code shape, sequential.
    const bare: number[] = [];
    for (let i = 0; i < (WARMUP + RUNS) * 4; i++) {
      const t0 = process.hrtime.bigint();
      const r = await sandbox.run({ code: 'return __ref0 + 1;', bindings: { __ref0: i }, timeoutMs: 10_000 });
      if (r.value !== i + 1) throw new Error('bad sandbox result');
      if (i >= WARMUP) bare.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    // Baseline 2: the engine alone with an instant sandbox (evaluates `return X + 1`).
    const instant: SandboxPort = {
      run: async (req) => ({ value: (Number(Object.values(req.bindings)[0]) || 0) + 1, logs: [] }),
    };
    const engineOnly = await timeRuns({ http, sandbox: instant, clock: realClock }, true);
    const real = await timeRuns({ http, sandbox, clock: realClock }, true);
    const shared = await timeRuns({ http, sandbox: perRun, clock: realClock }, true);
    const pure = await timeRuns({ http, sandbox: server, clock: realClock }, true);
    return {
      steps: STEPS,
      runs: RUNS,
      stepMsP50: round(p50(real)),
      stepMsP50ContextPerRun: round(p50(shared)),
      stepMsP50PureCode: round(p50(pure)),
      sandboxCallMsP50: round(p50(bare)),
      engineOnlyStepMsP50: round(p50(engineOnly)),
    };
  } finally {
    sandbox.dispose();
    perRun.dispose();
    server.dispose();
    http.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(
    (r) => console.log(JSON.stringify({ bench: 'step-overhead', ...r })),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
