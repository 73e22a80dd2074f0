// Messages between the server and its sandbox process (process-sandbox.ts, sandbox-process.ts).
import type { HttpRequest, HttpResponse, SandboxLogEntry } from '../engine/index.js';
import type { IsolatedVmSandboxOptions } from './isolated-vm.js';

/** What the sandbox process is started with (its first argument, as JSON). */
export type SandboxProcessOptions = Omit<IsolatedVmSandboxOptions, 'pureCode'>;

/** A fetch the code made, without what cannot cross (the signal: the server uses the run's own). */
export type CrossingHttpRequest = Omit<HttpRequest, 'signal'>;

export type ToSandbox =
  /** A call; `runId` names the run whose context it may share, `fetch` that the code may call the server's HttpPort. */
  | { t: 'run'; id: number; tenant: string; runId?: number; code: string; names: string[]; input: string; timeoutMs: number; fetch: boolean }
  /** The run ended (its signal aborted): its calls stop and its context is released. */
  | { t: 'end'; runId: number; reason: string }
  | { t: 'fetched'; id: number; fetchId: number; response?: HttpResponse; error?: string }
  | { t: 'parked'; id: number };

export interface ContextCounts { created: number; reused: number }

export type FromSandbox =
  | { t: 'ready' }
  /**
   * The value as JSON text (absent: undefined). Not as a structured clone: Node's IPC deserializer recurses per
   * level, and a value nested about 2,000 deep overflowed its stack in the server, an uncaught error that ended
   * the server; JSON.parse does not recurse.
   */
  | { t: 'done'; id: number; json?: string; logs: SandboxLogEntry[]; contexts: ContextCounts }
  | { t: 'failed'; id: number; message: string; logs: SandboxLogEntry[]; thrownByCode: boolean; contexts: ContextCounts }
  /** The call has its isolate: its code may run from now on (until then, a call lost with the process never ran). */
  | { t: 'started'; id: number }
  | { t: 'fetch'; id: number; fetchId: number; request: CrossingHttpRequest }
  | { t: 'parked'; id: number };
