// connector-request: what a `connector` block adds to calling the API directly. One process, one local
// API (test/connectors/fixtures.ts, its own OpenAPI document), sequential calls of getPet with a path,
// query and header parameter and bearer auth: (a) the guarded HTTP client called directly with the
// finished request, (b) a one-block workflow through runWorkflow whose connectors port checks the
// parameters against their schemas (schema-check.ts), builds the request and applies the auth (the
// service's port without its one database read per run). Reports p50 of each and the difference.
import { pathToFileURL } from 'node:url';
import { parseDocument } from '../src/connectors/openapi.js';
import { applyAuth, buildRequest } from '../src/connectors/requests.js';
import { compile, realClock, runWorkflow, type ConnectorsPort } from '../src/engine/index.js';
import { GuardedHttp } from '../src/net/guarded-http.js';
import { startUpstream } from '../test/connectors/fixtures.js';

export const standalone = true;
const RUNS = 2000;
const WARMUP = 200;

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number) => Math.round(n * 1000) / 1000;

export async function run(): Promise<Record<string, number>> {
  const up = await startUpstream();
  const http = new GuardedHttp({ allowPrivateNetwork: true });
  try {
    const { operations } = await parseDocument(up.document);
    const connectors: ConnectorsPort = {
      describe: async () => ({ name: 'Pets', operations }),
      prepare: async (call) => {
        const op = operations.find((o) => o.operationId === call.operationId)!;
        return applyAuth(buildRequest(up.url, op, call.parameters, call.body), { type: 'bearer', secret: 'T' }, await call.secret('T'));
      },
    };
    const graph = compile({
      name: 'bench', blocks: [
        { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'id', type: 'number' }] } },
        { id: 'call', type: 'connector', name: 'Call', config: { connectorId: 'c', operationId: 'getPet', parameters: { petId: '<start.id>', fields: 'short', 'X-Trace': 'bench' } } },
      ],
      edges: [{ from: 'start', to: 'call' }],
    });
    const direct: number[] = [];
    const block: number[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const id = (i % 50) + 1;
      let t0 = process.hrtime.bigint();
      const res = await http.request({
        url: `${up.url}/pets/${id}?fields=short`, method: 'GET', timeoutMs: 10_000,
        headers: { 'X-Trace': 'bench', accept: 'application/json', authorization: 'Bearer secret-token-value' },
      });
      if (res.status !== 200) throw new Error(`direct: HTTP ${res.status}`);
      if (i >= WARMUP) direct.push(Number(process.hrtime.bigint() - t0) / 1e6);
      t0 = process.hrtime.bigint();
      const r = await runWorkflow(graph, { input: { id }, ports: { http, sandbox: { run: async () => ({ value: null, logs: [] }) }, clock: realClock, connectors }, secrets: { T: 'secret-token-value' } });
      if (r.status !== 'completed') throw new Error(`block: ${r.error?.message}`);
      if (i >= WARMUP) block.push(Number(process.hrtime.bigint() - t0) / 1e6);
      up.received.length = 0;
    }
    const d = p50(direct);
    const b = p50(block);
    return { runs: RUNS, directMsP50: round(d), blockMsP50: round(b), overheadMsP50: round(b - d) };
  } finally {
    http.close();
    await up.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(`${JSON.stringify(await run())}\n`);
}
