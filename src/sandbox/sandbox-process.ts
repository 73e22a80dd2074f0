/**
 * The sandbox process: runs user code in isolated-vm isolates for the server (process-sandbox.ts). Isolates
 * live here, not in the server, because some allocations that pass an isolate's memory limit (a Map, an
 * object or an array grown past it) end in a V8 fatal out-of-memory error that isolated-vm cannot turn into
 * an exception: it aborts the whole process. Here that stops this process only; the server fails the calls
 * that were running in it and starts another (docs/architecture.md, "The sandbox process").
 */
import type { HttpPort } from '../engine/index.js';
import { IsolatedVmSandbox, SandboxError } from './isolated-vm.js';
import type { CrossingHttpRequest, FromSandbox, SandboxProcessOptions, ToSandbox } from './sandbox-protocol.js';

const options = JSON.parse(process.argv[2] ?? '{}') as SandboxProcessOptions;
// Pure code was evaluated by the server already: everything that reaches this process needs an isolate.
const sandbox = new IsolatedVmSandbox({ ...options, pureCode: false });
/** Each run's signal, aborted when the server says the run ended. */
const runs = new Map<number, AbortController>();
const fetches = new Map<number, { resolve: (r: Awaited<ReturnType<HttpPort['request']>>) => void; reject: (e: Error) => void }>();
let nextFetch = 1;

function send(msg: FromSandbox): void {
  // The server is gone when this fails: 'disconnect' below ends this process.
  if (process.connected) process.send?.(msg);
}

function runSignal(runId: number | undefined): AbortSignal | undefined {
  if (runId === undefined) return undefined;
  let run = runs.get(runId);
  if (!run) {
    run = new AbortController();
    runs.set(runId, run);
  }
  return run.signal;
}

/** The server's HttpPort for one call: each request crosses to the server, which makes it with the run's signal. */
function serverHttp(callId: number): HttpPort {
  return {
    request: (req) => new Promise((resolve, reject) => {
      const fetchId = nextFetch++;
      fetches.set(fetchId, { resolve, reject });
      const { signal: _signal, ...crossing } = req;
      send({ t: 'fetch', id: callId, fetchId, request: crossing satisfies CrossingHttpRequest });
    }),
  };
}

const counts = () => {
  const { created, reused } = sandbox.contextStats;
  return { created, reused };
};

process.on('message', (msg: ToSandbox) => {
  switch (msg.t) {
    case 'run': {
      const signal = runSignal(msg.runId);
      const req = { code: msg.code, timeoutMs: msg.timeoutMs, signal, http: msg.fetch ? serverHttp(msg.id) : undefined };
      const failed = (err: unknown) => send({
        t: 'failed', id: msg.id, message: err instanceof Error ? err.message : String(err),
        logs: err instanceof SandboxError ? err.logs : [], thrownByCode: err instanceof SandboxError && err.thrownByCode, contexts: counts(),
      });
      sandbox.runSerialized(msg.tenant, req, msg.names, msg.input, () => send({ t: 'started', id: msg.id })).then((r) => {
        let json: string | undefined;
        try {
          json = JSON.stringify(r.value);
        } catch (err) {
          // Too deep for JSON.stringify's recursion (far past what a run may hold: the engine's bound is 1,000 levels).
          failed(new SandboxError(`the returned value cannot be serialized as JSON: ${err instanceof Error ? err.message : String(err)}`, r.logs, true));
          return;
        }
        send({ t: 'done', id: msg.id, json, logs: r.logs, contexts: counts() });
      }, failed);
      return;
    }
    case 'end': {
      runs.get(msg.runId)?.abort(new Error(msg.reason));
      runs.delete(msg.runId);
      return;
    }
    case 'fetched': {
      const waiting = fetches.get(msg.fetchId);
      fetches.delete(msg.fetchId);
      if (!waiting) return;
      if (msg.response) waiting.resolve(msg.response);
      else waiting.reject(new Error(msg.error ?? 'the request failed'));
      return;
    }
    case 'parked':
      void sandbox.parked().then(() => send({ t: 'parked', id: msg.id }));
      return;
  }
});

// The server stopped (or let this process go when idle): nothing is left to run for.
process.on('disconnect', () => {
  sandbox.dispose();
  process.exit(0);
});

send({ t: 'ready' });
