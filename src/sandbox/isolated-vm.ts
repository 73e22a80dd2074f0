// SandboxPort adapter on isolated-vm. Warm isolates are reused; every call gets a fresh context
// (pre-created in the background so creation overlaps other work); compiled scripts are cached per
// code string. Nothing of the host is reachable from the code except what we pass: the bindings (as
// JSON), a console that records lines, and `fetch` through the request's HttpPort.
// Limits: memoryLimit per isolate (a memory bomb disposes the isolate; the next call gets a new
// one) and a timeout per call. `fetch` blocks the isolate until the host answers
// (applySyncPromise), so all of the user's code, awaits included, runs inside the one script run
// that isolated-vm's timeout covers; a host-side timer also bounds the whole call (a promise that
// never settles).
import { availableParallelism } from 'node:os';
import ivm from 'isolated-vm';
import type { HttpPort, SandboxLogEntry, SandboxPort, SandboxRequest, SandboxResult } from '../engine/types.js';

export interface IsolatedVmSandboxOptions {
  /** Memory limit per isolate in MB (default 128). */
  memoryLimitMb?: number;
  /** Warm isolates kept (default: 2, or 1 on a single-CPU machine). Calls spread across them. */
  isolates?: number;
  /** Compiled scripts cached per isolate (default 500). */
  scriptCacheSize?: number;
  /** Max fetch calls per sandbox call (default 100). */
  maxFetchesPerCall?: number;
  /** Calls admitted per isolate at once (default 2); more wait in a queue (not timed). */
  callsPerIsolate?: number;
  /**
   * Reuse one context for all calls that share a request `signal` (the engine passes one signal
   * per workflow run), instead of a fresh context per call. Faster (no context creation per step);
   * globals then persist between the function blocks of one run, never between runs. The context
   * is released when the signal aborts (the engine aborts it when the run ends). Default false.
   */
  contextPerRun?: boolean;
}

interface RunContext {
  slot: Slot;
  isolate: ivm.Isolate;
  context: Promise<ivm.Context>;
}

/** Error thrown for a failed call; carries the console lines written before the failure. */
export class SandboxError extends Error {
  constructor(message: string, readonly logs: SandboxLogEntry[] = []) {
    super(message);
    this.name = 'SandboxError';
  }
}

const MAX_RESULT_CHARS = 32 * 1024 * 1024;

// Runs first in every fresh context: takes the per-call inputs from globals, installs console and
// fetch, and defines the wrapper that calls the user function and serializes the outcome.
const PRELUDE = `(function () {
  const g = globalThis;
  const stringify = JSON.stringify, parse = JSON.parse;
  const input = g.__weftIn; delete g.__weftIn;
  const hostFetch = g.__weftFetch; delete g.__weftFetch;
  const logs = [];
  const fmt = (v) => {
    if (typeof v === 'string') return v;
    if (v instanceof Error) return String(v.stack || (v.name + ': ' + v.message));
    try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch (e) { return String(v); }
  };
  const writer = (level) => (...args) => {
    if (logs.length >= 1000) return;
    let m = args.map(fmt).join(' ');
    if (m.length > 10000) m = m.slice(0, 10000) + '…';
    logs.push({ level, message: m });
  };
  g.console = { log: writer('log'), info: writer('info'), warn: writer('warn'), error: writer('error'), debug: writer('log') };
  const toHeaders = (h) => {
    const out = {};
    if (!h) return out;
    if (Array.isArray(h)) { for (const [k, v] of h) out[String(k)] = String(v); return out; }
    if (typeof h.forEach === 'function' && typeof h.get === 'function') { h.forEach((v, k) => { out[String(k)] = String(v); }); return out; }
    for (const k of Object.keys(h)) out[k] = String(h[k]);
    return out;
  };
  g.fetch = async (url, init) => {
    if (!hostFetch) throw new Error('fetch is not available here');
    init = init || {};
    const body = init.body === undefined || init.body === null ? undefined : (typeof init.body === 'string' ? init.body : JSON.stringify(init.body));
    const req = JSON.stringify({ url: String(url), method: init.method ? String(init.method).toUpperCase() : 'GET', headers: toHeaders(init.headers), body });
    const res = JSON.parse(hostFetch.applySyncPromise(undefined, [req], { arguments: { copy: true } }));
    if (res.error !== undefined) throw new Error(res.error);
    const h = res.headers;
    const headers = {
      get: (n) => { const v = h[String(n).toLowerCase()]; return v === undefined ? null : v; },
      has: (n) => h[String(n).toLowerCase()] !== undefined,
      forEach: (cb) => { for (const k of Object.keys(h)) cb(h[k], k); },
      entries: () => Object.entries(h)[Symbol.iterator](),
      keys: () => Object.keys(h)[Symbol.iterator](),
      [Symbol.iterator]: () => Object.entries(h)[Symbol.iterator](),
      toJSON: () => h,
    };
    return {
      ok: res.status >= 200 && res.status < 300, status: res.status, statusText: '', url: String(url), headers,
      text: async () => res.body,
      json: async () => JSON.parse(res.body),
    };
  };
  g.__weftMain = (fn) => {
    delete g.__weftMain;
    const errText = (e) => {
      if (e instanceof Error) return (e.name && e.name !== 'Error' ? e.name + ': ' : '') + e.message;
      try { return typeof e === 'string' ? e : JSON.stringify(e); } catch (x) { return String(e); }
    };
    return Promise.resolve()
      .then(() => fn.apply(undefined, input === undefined ? [] : parse(input)))
      .then((value) => {
        try {
          return stringify({ ok: true, value: value === undefined ? null : value, logs });
        } catch (e) {
          return stringify({ ok: false, error: 'the returned value cannot be serialized as JSON: ' + errText(e), logs });
        }
      }, (e) => stringify({ ok: false, error: errText(e), logs }));
  };
})();`;

// User code starts after the prelude and the wrapper's first line.
const CODE_LINE_OFFSET = PRELUDE.split('\n').length + 1;

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

interface Slot {
  isolate: ivm.Isolate;
  scripts: Map<string, Promise<ivm.Script>>;
  spare: Promise<ivm.Context> | null;
  active: number;
  lastUsed: number;
}

function isJsIdentifier(name: string): boolean {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name);
}

function abortMessage(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error ? r.message : 'Aborted';
}

export class IsolatedVmSandbox implements SandboxPort {
  private readonly memoryLimitMb: number;
  private readonly scriptCacheSize: number;
  private readonly maxFetches: number;
  private readonly callsPerIsolate: number;
  private readonly slots: Slot[];
  private readonly waiters: { resolve: (slot: Slot) => void; reject: (err: Error) => void; signal?: AbortSignal; onAbort?: () => void }[] = [];
  private disposed = false;
  private useCounter = 0;
  private readonly contextPerRun: boolean;
  private readonly runContexts = new WeakMap<AbortSignal, RunContext>();

  constructor(opts: IsolatedVmSandboxOptions = {}) {
    this.memoryLimitMb = opts.memoryLimitMb ?? 128;
    this.scriptCacheSize = opts.scriptCacheSize ?? 500;
    this.maxFetches = opts.maxFetchesPerCall ?? 100;
    this.callsPerIsolate = Math.max(1, opts.callsPerIsolate ?? 2);
    this.contextPerRun = opts.contextPerRun === true;
    const count = Math.max(1, opts.isolates ?? Math.min(4, Math.max(2, availableParallelism())));
    this.slots = Array.from({ length: count }, () => this.newSlot());
  }

  private newSlot(): Slot {
    return { isolate: new ivm.Isolate({ memoryLimit: this.memoryLimitMb }), scripts: new Map(), spare: null, active: 0, lastUsed: 0 };
  }

  private renew(slot: Slot): void {
    if (!slot.isolate.isDisposed) {
      try {
        slot.isolate.dispose();
      } catch {
        // already gone
      }
    }
    slot.isolate = new ivm.Isolate({ memoryLimit: this.memoryLimitMb });
    slot.scripts = new Map();
    slot.spare = null;
  }

  /** Waits for an isolate with room; the call's timeout only starts once admitted. */
  private admit(signal?: AbortSignal): Promise<Slot> {
    // Least busy isolate (the first on a tie: sequential calls keep one isolate warm).
    let best: Slot | null = null;
    for (const s of this.slots) {
      if (s.active >= this.callsPerIsolate) continue;
      if (best === null || s.active < best.active) best = s;
    }
    if (best !== null) {
      best.active++;
      best.lastUsed = ++this.useCounter;
      if (best.isolate.isDisposed) this.renew(best);
      return Promise.resolve(best);
    }
    return new Promise<Slot>((resolve, reject) => {
      const waiter: (typeof this.waiters)[number] = { resolve, reject, signal };
      if (signal) {
        waiter.onAbort = () => {
          const i = this.waiters.indexOf(waiter);
          if (i !== -1) this.waiters.splice(i, 1);
          reject(new SandboxError(abortMessage(signal)));
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
    });
  }

  private release(slot: Slot): void {
    const next = this.waiters.shift();
    if (next === undefined) {
      slot.active--;
      return;
    }
    if (next.signal && next.onAbort) next.signal.removeEventListener('abort', next.onAbort);
    if (slot.isolate.isDisposed) this.renew(slot);
    slot.lastUsed = ++this.useCounter;
    next.resolve(slot);
  }

  private script(slot: Slot, code: string, names: string[]): Promise<ivm.Script> {
    const key = `${names.join(',')}\n${code}`;
    let p = slot.scripts.get(key);
    if (p === undefined) {
      const source = `${PRELUDE}\n__weftMain(async function (${names.join(', ')}) {\n${code}\n});`;
      p = slot.isolate.compileScript(source, { filename: 'file:///function.js' });
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

  private takeContext(slot: Slot): Promise<ivm.Context> {
    const spare = slot.spare;
    slot.spare = null;
    return spare ?? slot.isolate.createContext();
  }

  private refillSpare(slot: Slot): void {
    if (slot.spare !== null || slot.isolate.isDisposed) return;
    const p = slot.isolate.createContext();
    p.catch(() => {
      if (slot.spare === p) slot.spare = null;
    });
    slot.spare = p;
  }

  async run(req: SandboxRequest): Promise<SandboxResult> {
    if (this.disposed) throw new SandboxError('the sandbox has been shut down');
    if (req.signal?.aborted) throw new SandboxError(abortMessage(req.signal));
    const names = Object.keys(req.bindings);
    for (const n of names) if (!isJsIdentifier(n)) throw new SandboxError(`invalid binding name "${n}"`);
    let input: string;
    try {
      input = JSON.stringify(names.map((n) => req.bindings[n] === undefined ? null : req.bindings[n]));
    } catch (err) {
      throw new SandboxError(`the inputs cannot be serialized as JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
    const timeoutMs = Math.max(1, Math.floor(req.timeoutMs));

    const signal = req.signal;
    let shared = this.contextPerRun && signal ? this.runContexts.get(signal) : undefined;
    if (shared && shared.slot.isolate !== shared.isolate) shared = undefined; // isolate was replaced
    let slot: Slot;
    if (shared) {
      // Calls of one run stay on the isolate that holds the run's context.
      slot = shared.slot;
      slot.active++;
    } else {
      slot = await this.admit(signal);
      if (this.contextPerRun && signal) shared = this.openRunContext(slot, signal);
    }
    // The slot stays taken until the script really stopped (an aborted call may still be running
    // in the isolate until its timeout), so later calls are not admitted behind it.
    let busy: Promise<unknown> | null = null;
    let busyDone = false;
    try {
      return await this.runIn(slot, req, names, input, timeoutMs, shared, (running) => {
        busy = running;
        running.then(
          () => { busyDone = true; },
          () => { busyDone = true; },
        );
      });
    } finally {
      if (busy === null || busyDone) this.release(slot);
      else {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const limit = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs + 100);
        });
        void Promise.race([(busy as Promise<unknown>).catch(() => undefined), limit]).then(() => {
          clearTimeout(timer);
          this.release(slot);
        });
      }
    }
  }

  private openRunContext(slot: Slot, signal: AbortSignal): RunContext {
    const entry: RunContext = { slot, isolate: slot.isolate, context: this.takeContext(slot) };
    entry.context.catch(() => undefined);
    this.runContexts.set(signal, entry);
    signal.addEventListener(
      'abort',
      () => {
        if (this.runContexts.get(signal) === entry) this.runContexts.delete(signal);
        entry.context.then(
          (c) => {
            try {
              c.release();
            } catch {
              // isolate gone
            }
          },
          () => undefined,
        );
      },
      { once: true },
    );
    return entry;
  }

  private async runIn(
    slot: Slot,
    req: SandboxRequest,
    names: string[],
    input: string,
    timeoutMs: number,
    shared: RunContext | undefined,
    onRunning: (running: Promise<unknown>) => void,
  ): Promise<SandboxResult> {
    const isolate = slot.isolate;
    const started = Date.now();
    let script: ivm.Script;
    let context: ivm.Context;
    try {
      script = await this.script(slot, req.code, names);
      context = await (shared ? shared.context : this.takeContext(slot));
    } catch (err) {
      if (isolate.isDisposed) {
        this.renew(slot);
        throw new SandboxError('the sandbox was reset; try again');
      }
      throw new SandboxError(describeHostError(err));
    }

    let fetchRef: ivm.Reference | undefined;
    try {
      context.global.setIgnored('__weftIn', input);
      if (req.http && req.code.includes('fetch')) {
        fetchRef = new ivm.Reference(this.hostFetch(req.http, started, timeoutMs, req.signal));
        context.global.setIgnored('__weftFetch', fetchRef);
      }
      const running = script.run(context, { timeout: timeoutMs, promise: true }) as Promise<unknown>;
      onRunning(running);
      this.refillSpare(slot);
      const raw = await this.guard(running, timeoutMs, req.signal);
      if (typeof raw !== 'string') throw new SandboxError('the code did not complete');
      if (raw.length > MAX_RESULT_CHARS) throw new SandboxError('the returned value is too large');
      const parsed = JSON.parse(raw) as { ok: boolean; value?: unknown; error?: string; logs: SandboxLogEntry[] };
      if (!parsed.ok) throw new SandboxError(parsed.error ?? 'unknown error', parsed.logs);
      return { value: parsed.value, logs: parsed.logs };
    } catch (err) {
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
      if (!shared) {
        try {
          context.release();
        } catch {
          // isolate disposed
        }
      }
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

  /** Disposes all isolates. */
  dispose(): void {
    this.disposed = true;
    for (const w of this.waiters.splice(0)) w.reject(new SandboxError('the sandbox has been shut down'));
    for (const s of this.slots) {
      try {
        if (!s.isolate.isDisposed) s.isolate.dispose();
      } catch {
        // ignore
      }
    }
  }
}
