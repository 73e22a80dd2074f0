// SandboxPort of the server: pure code evaluated here (pure-code.ts), everything else in the isolates of a
// sandbox process (sandbox-process.ts; docs/architecture.md, "The sandbox process"). Code that ends that process
// (a V8 fatal out-of-memory error an isolate's limit did not catch) fails the calls running in it, and the next
// call starts a new one: the server goes on. The process starts at the first call that needs it and is let go
// after a minute without calls, so an idle server holds no isolate.
import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import type { HttpPort, SandboxPort, SandboxRequest, SandboxResult } from '../engine/index.js';
import { startModuleProcess } from '../worker-module.js';
import { abortMessage, SandboxError, serializeBindings } from './isolated-vm.js';
import { evaluatePureCode } from './pure-code.js';
import type { ContextCounts, FromSandbox, SandboxProcessOptions, ToSandbox } from './sandbox-protocol.js';

export interface ProcessSandboxOptions extends SandboxProcessOptions {
  /** Evaluate pure code here, without an isolate (default true; WEFT_SANDBOX_PURE_CODE). */
  pureCode?: boolean;
  /** The sandbox process is let go after this long without a call (default 60 s). */
  idleMs?: number;
  log?: Logger;
}

/** What a call's failure says when the process running it stopped. */
export const SANDBOX_PROCESS_STOPPED =
  'the sandbox process stopped while this code ran: code in it used more memory than its limit allows; the calls running in it failed';

type RunMessage = Extract<ToSandbox, { t: 'run' }>;

interface Pending {
  resolve: (r: SandboxResult) => void;
  reject: (e: Error) => void;
  child: SandboxChild;
  msg: RunMessage;
  /** The call has its isolate in the sandbox process: its code may have run. */
  started: boolean;
  http?: HttpPort;
  signal?: AbortSignal;
}

interface SandboxChild {
  proc: ChildProcess;
  ready: Promise<void>;
  /** Contexts it created and reused so far (from its last answer). */
  contexts: ContextCounts;
  /** Calls begun and not ended. */
  calls: number;
}

export class ProcessSandbox implements SandboxPort {
  private child?: SandboxChild;
  private readonly pending = new Map<number, Pending>();
  private readonly parkWaiters = new Map<number, () => void>();
  private nextId = 1;
  private nextRun = 1;
  /** Runs that have sent a call to the sandbox process, by their signal: pure code no longer applies to them. */
  private readonly runIds = new WeakMap<AbortSignal, number>();
  private idleTimer?: NodeJS.Timeout;
  private disposed = false;
  private pureCalls = 0;
  /** Contexts counted by sandbox processes that have stopped. */
  private readonly stoppedCounts: ContextCounts = { created: 0, reused: 0 };
  private readonly pureCode: boolean;
  private readonly idleMs: number;

  constructor(private readonly opts: ProcessSandboxOptions = {}) {
    this.pureCode = opts.pureCode ?? true;
    this.idleMs = opts.idleMs ?? 60_000;
  }

  /** A SandboxPort whose calls count against `tenant` (a workspace id) for fair scheduling. */
  forTenant(tenant: string): SandboxPort {
    return { run: (req) => this.runAs(tenant, req) };
  }

  run(req: SandboxRequest): Promise<SandboxResult> {
    return this.runAs('', req);
  }

  /** Contexts created, calls served by a context an earlier call used, and calls evaluated without one (metrics, tests). */
  get contextStats(): Readonly<{ created: number; reused: number; pure: number }> {
    const live = this.child?.contexts ?? { created: 0, reused: 0 };
    return { created: this.stoppedCounts.created + live.created, reused: this.stoppedCounts.reused + live.reused, pure: this.pureCalls };
  }

  /** The sandbox process's pid while one runs (tests, diagnostics). */
  get pid(): number | undefined {
    return this.child?.proc.pid;
  }

  /** Resolves once the sandbox process has wiped and parked the contexts of runs that ended (tests). */
  parked(): Promise<void> {
    const child = this.child;
    if (!child) return Promise.resolve();
    const id = this.nextId++;
    return new Promise<void>((resolve) => {
      this.parkWaiters.set(id, resolve);
      void child.ready.then(() => this.send(child, { t: 'parked', id }), () => resolve());
    });
  }

  /** Stops the sandbox process; later calls fail. */
  dispose(): void {
    this.disposed = true;
    clearTimeout(this.idleTimer);
    const child = this.child;
    this.child = undefined;
    if (child) this.stop(child, new SandboxError('the sandbox has been shut down'));
  }

  private async runAs(tenant: string, req: SandboxRequest): Promise<SandboxResult> {
    if (this.disposed) throw new SandboxError('the sandbox has been shut down');
    const signal = req.signal;
    if (signal?.aborted) throw new SandboxError(abortMessage(signal));
    const { names, input } = serializeBindings(req.bindings);
    // Not once the run has a context there: an earlier block may have changed its built-ins, which pure code can see.
    if (this.pureCode && !(signal && this.runIds.has(signal))) {
      const answer = evaluatePureCode(req.code, names, input);
      if (answer !== undefined) {
        this.pureCalls++;
        return { value: answer.value, logs: [] };
      }
    }
    const child = this.childProcess();
    this.hold(child);
    try {
      await child.ready;
      if (signal?.aborted) throw new SandboxError(abortMessage(signal));
    } catch (err) {
      this.letGo(child);
      throw err;
    }
    const id = this.nextId++;
    const runId = signal ? this.runIdOf(signal) : undefined;
    return new Promise<SandboxResult>((resolve, reject) => {
      const onAbort = () => this.settle(id, (p) => p.reject(new SandboxError(abortMessage(signal as AbortSignal))));
      const done = (r: SandboxResult) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const failed = (e: Error) => {
        signal?.removeEventListener('abort', onAbort);
        reject(e);
      };
      const msg: RunMessage = { t: 'run', id, tenant, runId, code: req.code, names, input, timeoutMs: req.timeoutMs, fetch: req.http !== undefined };
      this.pending.set(id, { resolve: done, reject: failed, child, msg, started: false, http: req.http, signal });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.send(child, msg);
    });
  }

  /** The run's id in the sandbox process; when its signal aborts (the run ended) the process releases its context. */
  private runIdOf(signal: AbortSignal): number {
    let runId = this.runIds.get(signal);
    if (runId === undefined) {
      const id = this.nextRun++;
      runId = id;
      this.runIds.set(signal, id);
      signal.addEventListener('abort', () => {
        // To the process of the moment: one started since may hold a context of the run too.
        if (this.child) this.send(this.child, { t: 'end', runId: id, reason: abortMessage(signal) });
      }, { once: true });
    }
    return runId;
  }

  private childProcess(): SandboxChild {
    if (this.child) return this.child;
    const { log: _log, idleMs: _idle, pureCode: _pure, ...options } = this.opts;
    // --no-node-snapshot: isolated-vm needs it on Node 20 and later. A young generation of 1 MB (the flag reaches
    // the isolates too): 99 against 134 MB after 4,000 calls, calls/s the same (docs/architecture.md, The sandbox process).
    const proc = startModuleProcess(import.meta.url, 'sandbox-process', [JSON.stringify(options)], {
      execArgv: ['--no-node-snapshot', '--max-semi-space-size=1'],
    });
    let ready!: () => void;
    let failed!: (e: Error) => void;
    const child: SandboxChild = {
      proc,
      ready: new Promise<void>((resolve, reject) => {
        ready = resolve;
        failed = reject;
      }),
      contexts: { created: 0, reused: 0 },
      calls: 0,
    };
    child.ready.catch(() => undefined);
    proc.on('message', (msg: FromSandbox) => {
      if (msg.t === 'ready') ready();
      else this.onMessage(child, msg);
    });
    proc.on('exit', (code, sig) => {
      failed(new SandboxError(`the sandbox process could not start (${sig ?? `exit code ${code}`})`));
      if (this.child === child) this.child = undefined;
      this.stoppedCounts.created += child.contexts.created;
      this.stoppedCounts.reused += child.contexts.reused;
      const lost = [...this.pending.entries()].filter(([, p]) => p.child === child);
      const started = lost.filter(([, p]) => p.started);
      if (lost.length > 0 || (sig !== null && sig !== 'SIGTERM')) {
        this.opts.log?.warn({ code, signal: sig, failedCalls: started.length, resentCalls: lost.length - started.length },
          'the sandbox process stopped; the next call starts a new one');
      }
      // Calls whose code may have run fail (the one that ended the process among them); the others never ran
      // and go to a new process: another workspace's call waiting for an isolate is not lost with it.
      for (const [id] of started) this.settle(id, (p) => p.reject(new SandboxError(SANDBOX_PROCESS_STOPPED)));
      this.resend(child, lost.filter(([, p]) => !p.started));
      for (const [id, resolve] of this.parkWaiters) {
        this.parkWaiters.delete(id);
        resolve();
      }
    });
    // Its pipe closes with it; an error here is a process already gone ('exit' handles that).
    proc.on('error', () => undefined);
    // Never keeps the server alive by itself.
    proc.unref();
    proc.channel?.unref();
    this.child = child;
    return child;
  }

  private onMessage(child: SandboxChild, msg: FromSandbox): void {
    switch (msg.t) {
      case 'done':
        child.contexts = msg.contexts;
        this.settle(msg.id, (p) => p.resolve({ value: msg.value, logs: msg.logs }));
        return;
      case 'failed':
        child.contexts = msg.contexts;
        this.settle(msg.id, (p) => p.reject(new SandboxError(msg.message, msg.logs, msg.thrownByCode)));
        return;
      case 'started': {
        const p = this.pending.get(msg.id);
        if (p) p.started = true;
        return;
      }
      case 'fetch': {
        const p = this.pending.get(msg.id);
        const reply = (answer: { response?: ToSandboxFetched['response']; error?: string }) =>
          this.send(child, { t: 'fetched', id: msg.id, fetchId: msg.fetchId, ...answer });
        if (!p?.http) {
          reply({ error: 'fetch is not available to this call' });
          return;
        }
        p.http.request({ ...msg.request, signal: p.signal }).then(
          (response) => reply({ response }),
          (err: unknown) => reply({ error: err instanceof Error ? err.message : String(err) }),
        );
        return;
      }
      case 'parked': {
        const resolve = this.parkWaiters.get(msg.id);
        this.parkWaiters.delete(msg.id);
        resolve?.();
        return;
      }
      case 'ready':
        return;
    }
  }

  /** Ends call `id` (once: a late answer of a call already ended is dropped). */
  private settle(id: number, end: (p: Pending) => void): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    end(p);
    this.letGo(p.child);
  }

  /** A call began: while any waits, the sandbox process keeps this one alive (a CLI command waiting for its run, say). */
  private hold(child: SandboxChild): void {
    if (child.calls++ > 0) return;
    // Both: the process handle delivers its 'exit', which fails the calls of a process that stopped.
    child.proc.ref();
    child.proc.channel?.ref();
    clearTimeout(this.idleTimer);
  }

  private letGo(child: SandboxChild): void {
    if (--child.calls > 0) return;
    child.proc.unref();
    child.proc.channel?.unref();
    if (child === this.child) this.armIdle();
  }

  /** Sends calls that never ran in a stopped process to a new one. */
  private resend(stopped: SandboxChild, calls: [number, Pending][]): void {
    if (calls.length === 0) return;
    if (this.disposed) {
      this.failCalls(stopped, new SandboxError('the sandbox has been shut down'));
      return;
    }
    const next = this.childProcess();
    for (const [, p] of calls) {
      p.child = next;
      this.hold(next);
      stopped.calls--;
    }
    next.ready.then(
      () => {
        for (const [id, p] of calls) if (this.pending.get(id) === p) this.send(next, p.msg);
      },
      (err: unknown) => {
        for (const [id] of calls) this.settle(id, (p) => p.reject(err instanceof Error ? err : new SandboxError(String(err))));
      },
    );
  }

  private failCalls(child: SandboxChild, err: Error): void {
    for (const [id, p] of this.pending) if (p.child === child) this.settle(id, (q) => q.reject(err));
  }

  /** Lets the sandbox process go after `idleMs` without a call: an idle server holds no isolate. */
  private armIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      const child = this.child;
      if (!child || child.calls > 0) return;
      this.child = undefined;
      this.stop(child, new SandboxError('the sandbox process was let go while idle'));
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private stop(child: SandboxChild, err: Error): void {
    this.failCalls(child, err);
    // Closing the channel ends it (its 'disconnect' handler); the kill covers one that is stuck.
    if (child.proc.connected) child.proc.disconnect();
    const kill = setTimeout(() => child.proc.kill('SIGKILL'), 2000);
    kill.unref();
    child.proc.once('exit', () => clearTimeout(kill));
  }

  private send(child: SandboxChild, msg: ToSandbox): void {
    if (!child.proc.connected) {
      // Gone between the call's start and now: its 'exit' may have failed the calls before this one was added.
      if (msg.t === 'run') this.settle(msg.id, (p) => p.reject(new SandboxError(SANDBOX_PROCESS_STOPPED)));
      return;
    }
    child.proc.send(msg, (err) => {
      if (err && msg.t === 'run') this.settle(msg.id, (p) => p.reject(new SandboxError(`the call could not reach the sandbox process: ${err.message}`)));
    });
  }
}

type ToSandboxFetched = Extract<ToSandbox, { t: 'fetched' }>;
