// Shared fixtures for engine tests: real adapters (isolated-vm sandbox, guarded HTTP allowing the
// local test server) and a local node:http server that counts requests per path.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { compile, realClock, runWorkflow, type BlockDefinition, type EdgeDefinition, type EnginePorts, type RunOptions, type RunResult, type WorkflowDefinition } from '../../src/engine/index.js';
import { GuardedHttp } from '../../src/net/guarded-http.js';
import { IsolatedVmSandbox } from '../../src/sandbox/isolated-vm.js';

// One sandbox for the worker process, shared by the engine suites (vitest keeps modules across files in a
// worker): a suite that disposed it would leave the next one without isolates.
export const sandbox = new IsolatedVmSandbox();
export const httpPort = new GuardedHttp({ allowPrivateNetwork: true });

export function ports(extra: Partial<EnginePorts> = {}): EnginePorts {
  return { http: httpPort, sandbox, clock: realClock, ...extra };
}

export function start(inputFormat: unknown[] = []): BlockDefinition {
  return { id: 'start', type: 'start', name: 'Start', config: { inputFormat } };
}

export function fn(id: string, code: string, extra: Partial<BlockDefinition> = {}): BlockDefinition {
  return { id, type: 'function', name: id, config: { code }, ...extra };
}

/** Edges for a chain a -> b -> c ... */
export function chain(...ids: string[]): EdgeDefinition[] {
  const edges: EdgeDefinition[] = [];
  for (let i = 1; i < ids.length; i++) edges.push({ from: ids[i - 1], to: ids[i] });
  return edges;
}

export function workflow(blocks: BlockDefinition[], edges: EdgeDefinition[], extra: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return { name: 'test', blocks, edges, ...extra };
}

export async function run(def: WorkflowDefinition, opts: Partial<RunOptions> = {}): Promise<RunResult> {
  return runWorkflow(compile(def), { input: {}, ports: ports(), ...opts });
}

export interface TestServer {
  url: string;
  hits: Map<string, number>;
  requests: { method: string; path: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

/** Local HTTP server; routes by path (without query). Unknown paths answer 404. */
export async function startServer(routes: Record<string, Handler>): Promise<TestServer> {
  const hits = new Map<string, number>();
  const requests: TestServer['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0];
      hits.set(path, (hits.get(path) ?? 0) + 1);
      requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
      const handler = routes[path];
      if (!handler) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
        return;
      }
      handler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(res: http.ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}
