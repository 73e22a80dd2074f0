// SandboxPort adapter on isolated-vm. Warm isolates are reused; every run (or call) gets a fresh context, or
// with `contexts: 'workspace'` every call a hardened one that earlier calls of its workspace used
// (contexts.ts); compiled scripts are cached per code string. Nothing of the host is reachable from the code except what we pass: the bindings (as
// JSON), a console that records lines, and `fetch` through the request's HttpPort.
// Limits: memoryLimit per isolate (a memory bomb disposes the isolate; the next call gets a new
// one) and a timeout per call. `fetch` blocks the isolate until the host answers
// (applySyncPromise), so all of the user's code, awaits included, runs inside the one script run
// that isolated-vm's timeout covers; a host-side timer also bounds the whole call (a promise that
// never settles).
// Code that only computes a value from its inputs never reaches an isolate: pure-code.ts answers it on the
// host, as a fresh context would, unless the run already has a context.
// Scheduling: the isolates are the slots of a FairPool (fair-pool.ts), each running one call at a
// time, so a call's timeout starts when its code starts. Calls carry a tenant (`forTenant`, one per
// workspace) so that one workspace's infinite loops never stall another's calls.
import { availableParallelism } from 'node:os';
import ivm from 'isolated-vm';
import type { HttpPort, SandboxLogEntry, SandboxPort, SandboxRequest, SandboxResult } from '../engine/types.js';
import { FairPool } from './fair-pool.js';
import { ContextSupply, emptyContextStore, release, type ContextStore, type Lease, type SandboxContexts } from './contexts.js';
import { CODE_LINE_OFFSET, functionSource } from './prelude.js';
import { evaluatePureCode } from './pure-code.js';

export type { SandboxContexts } from './contexts.js';

export interface IsolatedVmSandboxOptions {
  /** Memory limit per isolate in MB (default 128). */
  memoryLimitMb?: number;
  /**
   * Isolates in the pool, each running one call at a time (default: the number of cores,
   * `os.availableParallelism()`; configured by WEFT_SANDBOX_POOL_SIZE). Created on first use.
   */
  poolSize?: number;
  /** Compiled scripts cached per isolate (default 500). */
  scriptCacheSize?: number;
  /** Max fetch calls per sandbox call (default 100). */
  maxFetchesPerCall?: number;
  /**
   * Reuse one context for all calls that share a request `signal` (the engine passes one signal
   * per workflow run), instead of a fresh context per call. Faster (no context creation per step);
   * globals then usually persist between the function blocks of one run (when a call runs on
   * another isolate than the run's context, it gets a fresh context), never between runs. The
   * context is released when the signal aborts (the engine aborts it when the run ends). Default false.
   */
  contextPerRun?: boolean;
  /**
   * `fresh` (default): a new V8 context per call, or per run with `contextPerRun`. `workspace`: contexts
   * are hardened (built-ins frozen, harden.ts) and handed from one call to the next of the same workspace,
   * each call starting with no global an earlier call left; `contextPerRun` is then ignored, so a context
   * is held only while a call runs and an isolate needs about one per workspace. Creating a context costs
   * about 1 ms of CPU, running a small function in one about 0.03 ms (docs/architecture.md, "Sandbox
   * contexts"). Configured by WEFT_SANDBOX_CONTEXTS.
   */
  contexts?: SandboxContexts;
  /**
   * Evaluate code that only computes a value from its inputs on the host, without a context (pure-code.ts;
   * docs/architecture.md, "Pure code"). Default true; configured by WEFT_SANDBOX_PURE_CODE.
   */
  pureCode?: boolean;
}

/** Tenant of calls made through `run` directly (not through `forTenant`). */
const DEFAULT_TENANT = '';

/** The prelude's answer when an earlier run's globals cannot be removed (harden.ts). */
const UNCLEAN = 'weft:unclean';

/** Error thrown for a failed call; carries the console lines written before the failure. */
export class SandboxError extends Error {
  /** `thrownByCode`: the user's code threw (or rejected); the sandbox itself is sound. */
  constructor(message: string, readonly logs: SandboxLogEntry[] = [], readonly thrownByCode = false) {
    super(message);
    this.name = 'SandboxError';
  }
}

const MAX_RESULT_CHARS = 32 * 1024 * 1024;

/** Host-side errors (syntax errors) point into the wrapped source: show the user's line. */
function describeHostError(err: unknown): string {
  const e = err instanceof Error ? err : new Error(String(err));
  let message = e.message.replace(/\s*\[file:\/\/\/function\.js:(\d+):(\d+)\]/, (_m, line: string) => {
    const userLine = Number(line) - CODE_LINE_OFFSET;
    return userLine >= 1 ? ` (line ${userLine})` : '';
  });
  if (e.name && e.name !== 'Error' && !message.startsWith(e.name)) message = `${e.name}: ${message}`;
  return message;
}

/** One isolate of the pool with its caches. */
interface Slot extends ContextStore {
  scripts: Map<string, Promise<ivm.Script>>;
}

function isJsIdentifier(name: string): boolean {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name);
}

/** A call's bindings as the sandbox takes them: their names, and their values as one JSON array. */
export function serializeBindings(bindings: Record<string, unknown>): { names: string[]; input: string } {
  const names = Object.keys(bindings);
  for (const n of names) if (!isJsIdentifier(n)) throw new SandboxError(`invalid binding name "${n}"`);
  try {
    return { names, input: JSON.stringify(names.map((n) => bindings[n] === undefined ? null : bindings[n])) };
  } catch (err) {
    throw new SandboxError(`the inputs cannot be serialized as JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export function abortMessage(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error ? r.message : 'Aborted';
}

export class IsolatedVmSandbox implements SandboxPort {
  private readonly memoryLimitMb: number;
  private readonly scriptCacheSize: number;
  private readonly maxFetches: number;
  /** Isolates in the pool (more exist only while lent to tenants under their share). */
  readonly poolSize: number;
  private readonly pool: FairPool<Slot>;
  private readonly contextPerRun: boolean;
  private readonly contexts: ContextSupply<Slot>;
  private readonly runContexts = new WeakMap<AbortSignal, Lease<Slot>>();
  private readonly pureCode: boolean;
  private pureCalls = 0;

  constructor(opts: IsolatedVmSandboxOptions = {}) {
    this.memoryLimitMb = opts.memoryLimitMb ?? 128;
    this.scriptCacheSize = opts.scriptCacheSize ?? 500;
    this.maxFetches = opts.maxFetchesPerCall ?? 100;
    const reuse = opts.contexts === 'workspace';
    this.contextPerRun = opts.contextPerRun === true && !reuse;
    this.contexts = new ContextSupply<Slot>(reuse, (slot, isolate) => slot.isolate === isolate && !isolate.isDisposed && !this.pool.disposed && !this.pool.isRetired(slot));
    this.pureCode = opts.pureCode ?? true;
    this.poolSize = Math.max(1, Math.floor(opts.poolSize ?? availableParallelism()));
    this.pool = new FairPool<Slot>({
      size: this.poolSize,
      createSlot: () => this.newSlot(),
      disposeSlot: disposeIsolate,
      prepareSlot: (slot) => {
        if (slot.isolate.isDisposed) this.renew(slot);
      },
      abortError: (signal) => new SandboxError(abortMessage(signal)),
    });
  }

  /** A SandboxPort whose calls count against `tenant` (a workspace id) for fair scheduling. */
  forTenant(tenant: string): SandboxPort {
    return { run: (req) => this.runAs(tenant, req) };
  }

  run(req: SandboxRequest): Promise<SandboxResult> {
    return this.runAs(DEFAULT_TENANT, req);
  }

  /** Contexts created, calls served by a context an earlier call used, and calls evaluated without one (for tests and metrics). */
  get contextStats(): Readonly<{ created: number; reused: number; pure: number }> {
    return { ...this.contexts.stats, pure: this.pureCalls };
  }

  private newSlot(): Slot {
    return { ...emptyContextStore(new ivm.Isolate({ memoryLimit: this.memoryLimitMb })), scripts: new Map() };
  }

  private renew(slot: Slot): void {
    disposeIsolate(slot);
    Object.assign(slot, emptyContextStore(new ivm.Isolate({ memoryLimit: this.memoryLimitMb })));
    slot.scripts = new Map();
  }

  private script(slot: Slot, code: string, names: string[]): Promise<ivm.Script> {
    const key = `${names.join(',')}\n${code}`;
    let p = slot.scripts.get(key);
    if (p === undefined) {
      p = slot.isolate.compileScript(functionSource(code, names), { filename: 'file:///function.js' });
      p.catch(() => slot.scripts.delete(key));
      if (slot.scripts.size >= this.scriptCacheSize) {
        const oldest = slot.scripts.keys().next().value;
        if (oldest !== undefined) slot.scripts.delete(oldest);
      }
      slot.scripts.set(key, p);
    } else {
      // Keep recently used scripts at the end (LRU order).
      slot.scripts.delete(key);
      slot.scripts.set(key, p);
    }
    return p;
  }

  private async runAs(tenant: string, req: SandboxRequest): Promise<SandboxResult> {
    if (this.pool.disposed) throw new SandboxError('the sandbox has been shut down');
    if (req.signal?.aborted) throw new SandboxError(abortMessage(req.signal));
    const { names, input } = serializeBindings(req.bindings);
    // Not once the run has a context: an earlier block may have changed its built-ins, which pure code can see.
    if (this.pureCode && !(req.signal && this.runContexts.has(req.signal))) {
      const answer = evaluatePureCode(req.code, names, input);
      if (answer !== undefined) {
        this.pureCalls++;
        return { value: answer.value, logs: [] };
      }
    }
    return this.runSerialized(tenant, req, names, input);
  }

  /**
   * A call whose bindings are already serialized (`serializeBindings`), in an isolate: what the sandbox process
   * runs for the server (process-sandbox.ts), which evaluated pure code itself. `onSlot` is called once the
   * call has its isolate, before any of its code runs.
   */
  async runSerialized(
    tenant: string, req: Omit<SandboxRequest, 'bindings'>, names: string[], input: string, onSlot?: () => void,
  ): Promise<SandboxResult> {
    if (this.pool.disposed) throw new SandboxError('the sandbox has been shut down');
    if (req.signal?.aborted) throw new SandboxError(abortMessage(req.signal));
    const timeoutMs = Math.max(1, Math.floor(req.timeoutMs));
    const signal = req.signal;
    let shared = this.contextPerRun && signal ? this.runContexts.get(signal) : undefined;
    const slot = await this.pool.acquire(tenant, signal, shared?.slot);
    // From here the code may run: a caller that must know whether it did (the sandbox process) is told.
    onSlot?.();
    if (shared && (shared.slot !== slot || shared.isolate !== slot.isolate || this.pool.isRetired(slot))) {
      const stale = this.pool.isRetired(shared.slot) || shared.slot.isolate !== shared.isolate;
      // The run's context lives on another isolate that is busy: this call gets a context of its own.
      shared = stale && signal ? this.openRunContext(slot, signal, tenant) : undefined;
    } else if (!shared && this.contextPerRun && signal) {
      shared = this.openRunContext(slot, signal, tenant);
    }
    const lease = shared ?? this.contexts.lease(slot, tenant);
    // The slot stays taken until the script really stopped (an aborted call may still be running
    // in the isolate until its timeout), so later calls are not admitted behind it.
    let busy: Promise<unknown> | null = null;
    let busyDone = false;
    try {
      return await this.runIn(lease, req, names, input, timeoutMs, (running) => {
        busy = running;
        busyDone = false;
        running.then(
          () => { busyDone = true; },
          () => { busyDone = true; },
        );
      });
    } finally {
      if (!shared) this.contexts.end(lease);
      if (busy === null || busyDone) this.pool.release(slot);
      else {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const limit = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs + 100);
        });
        void Promise.race([(busy as Promise<unknown>).catch(() => undefined), limit]).then(() => {
          clearTimeout(timer);
          this.pool.release(slot);
        });
      }
    }
  }

  /** The run's context on this isolate, until the run's signal aborts (the engine aborts it when the run ends). */
  private openRunContext(slot: Slot, signal: AbortSignal, tenant: string): Lease<Slot> {
    const lease = this.contexts.lease(slot, tenant);
    this.runContexts.set(signal, lease);
    signal.addEventListener(
      'abort',
      () => {
        if (this.runContexts.get(signal) === lease) this.runContexts.delete(signal);
        this.contexts.end(lease);
      },
      { once: true },
    );
    return lease;
  }

  private async runIn(
    lease: Lease<Slot>,
    req: Omit<SandboxRequest, 'bindings'>,
    names: string[],
    input: string,
    timeoutMs: number,
    onRunning: (running: Promise<unknown>) => void,
  ): Promise<SandboxResult> {
    const { slot, isolate } = lease;
    const started = Date.now();
    let script: ivm.Script;
    let context: ivm.Context;
    try {
      script = await this.script(slot, req.code, names);
      context = await lease.context;
    } catch (err) {
      lease.spoiled = true;
      if (isolate.isDisposed) {
        if (slot.isolate === isolate) this.renew(slot);
        throw new SandboxError('the sandbox was reset; try again');
      }
      throw new SandboxError(describeHostError(err));
    }

    let fetchRef: ivm.Reference | undefined;
    try {
      if (req.http && req.code.includes('fetch')) fetchRef = new ivm.Reference(this.hostFetch(req.http, started, timeoutMs, req.signal));
      let raw: unknown;
      for (;;) {
        // One write per call (two when it may fetch): each is a task for the isolate's thread.
        context.global.setIgnored('__weftIn', `${lease.wipe ? 'W' : '-'}${fetchRef ? 'F' : '-'}${input}`);
        if (fetchRef !== undefined) context.global.setIgnored('__weftFetch', fetchRef);
        const wiping = lease.wipe;
        lease.wipe = false;
        const running = script.run(context, { timeout: timeoutMs, promise: true }) as Promise<unknown>;
        onRunning(running);
        this.contexts.refillSpare(slot);
        try {
          raw = await this.guard(running, timeoutMs, req.signal);
          break;
        } catch (err) {
          if (!wiping || !(err instanceof Error) || err.message !== UNCLEAN) throw err;
          // An earlier call left what cannot be removed; nothing of this call ran. Start over in a new context.
          release(context);
          lease.context = this.contexts.create(slot);
          context = await lease.context;
        }
      }
      if (typeof raw !== 'string') throw new SandboxError('the code did not complete');
      if (raw.length > MAX_RESULT_CHARS) throw new SandboxError('the returned value is too large');
      const parsed = JSON.parse(raw) as { ok: boolean; value?: unknown; error?: string; logs: SandboxLogEntry[] };
      if (!parsed.ok) throw new SandboxError(parsed.error ?? 'unknown error', parsed.logs, true);
      return { value: parsed.value, logs: parsed.logs };
    } catch (err) {
      if (!(err instanceof SandboxError && err.thrownByCode)) lease.spoiled = true;
      if (err instanceof SandboxError) throw err;
      const message = err instanceof Error ? err.message : String(err);
      if (/memory limit/i.test(message) || isolate.isDisposed) {
        if (slot.isolate === isolate) this.renew(slot);
        throw new SandboxError(`the code exceeded the memory limit of ${this.memoryLimitMb} MB`);
      }
      if (/timed out/i.test(message)) throw new SandboxError(`the code timed out after ${timeoutMs} ms`);
      throw new SandboxError(describeHostError(err));
    } finally {
      fetchRef?.release();
    }
  }

  /** Host-side timeout and abort for the whole call. */
  private guard(running: Promise<unknown>, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      const finish = () => {
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        if (settled) return;
        finish();
        reject(new SandboxError(signal ? abortMessage(signal) : 'Aborted'));
      };
      // A little grace so the isolate's own timeout reports first.
      const timer = setTimeout(() => {
        if (settled) return;
        finish();
        reject(new SandboxError(`the code timed out after ${timeoutMs} ms`));
      }, timeoutMs + 100);
      signal?.addEventListener('abort', onAbort, { once: true });
      running.then(
        (v) => {
          if (settled) return;
          finish();
          resolve(v);
        },
        (err: unknown) => {
          if (settled) return;
          finish();
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
  }

  private hostFetch(http: HttpPort, started: number, timeoutMs: number, signal?: AbortSignal): (req: string) => Promise<string> {
    let calls = 0;
    const fn = async (reqJson: string): Promise<string> => {
      try {
        if (++calls > this.maxFetches) throw new Error(`too many fetch calls (max ${this.maxFetches})`);
        const r = JSON.parse(reqJson) as { url: string; method: string; headers: Record<string, string>; body?: string };
        const remaining = timeoutMs - (Date.now() - started);
        if (remaining <= 0) throw new Error(`the code timed out after ${timeoutMs} ms`);
        const res = await http.request({ url: r.url, method: r.method, headers: r.headers, body: r.body, timeoutMs: remaining, signal });
        return JSON.stringify({ status: res.status, headers: res.headers, body: res.body });
      } catch (err) {
        return JSON.stringify({ error: err instanceof Error ? err.message : String(err) });
      }
    };
    // No prototype: the reference handed to the isolate cannot be walked to the host Function.
    Object.setPrototypeOf(fn, null);
    return fn;
  }

  /** Resolves once the contexts of runs that have ended are wiped and idle (or released). */
  parked(): Promise<void> {
    return this.contexts.parked();
  }

  /** Disposes all isolates. */
  dispose(): void {
    this.pool.dispose(new SandboxError('the sandbox has been shut down'));
  }
}

function disposeIsolate(slot: Slot): void {
  try {
    if (!slot.isolate.isDisposed) slot.isolate.dispose();
  } catch {
    // already gone
  }
}
