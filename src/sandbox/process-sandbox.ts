// SandboxPort of the server: pure code evaluated here (pure-code.ts), everything else in the isolates of a
// sandbox process (sandbox-process.ts; docs/architecture.md, "The sandbox process"). Code that ends that process
// (a V8 fatal out-of-memory error an isolate's limit did not catch) fails the calls running in it, and the next
// call starts a new one: the server goes on. The process starts at the first call that needs it and is let go
// after a minute without calls, so an idle server holds no isolate. A workspace whose code keeps ending the
// process is dealt with by its crash budget (crash-budget.ts): its calls run apart, then are refused for a while.
import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import type { HttpPort, SandboxPort, SandboxRequest, SandboxResult } from '../engine/index.js';
import { startModuleProcess } from '../worker-module.js';
import { CrashBudget, type CrashBudgetOptions } from './crash-budget.js';
import { abortMessage, SandboxError, serializeBindings } from './isolated-vm.js';
import { evaluatePureCode } from './pure-code.js';
import type { ContextCounts, FromSandbox, SandboxProcessOptions, ToSandbox } from './sandbox-protocol.js';

export interface ProcessSandboxOptions extends SandboxProcessOptions {
  /** Evaluate pure code here, without an isolate (default true; WEFT_SANDBOX_PURE_CODE). */
  pureCode?: boolean;
  /** The sandbox process is let go after this long without a call (default 60 s). */
  idleMs?: number;
  /** When a workspace's calls run apart or are refused after crashes (crash-budget.ts). */
  crashBudget?: CrashBudgetOptions;
  log?: Logger;
}

/** What a call's failure says when the process running it stopped. */
export const SANDBOX_PROCESS_STOPPED =
  'the sandbox process stopped while this code ran: code in it used more memory than its limit allows; the calls running in it failed';

type RunMessage = Extract<ToSandbox, { t: 'run' }>;

/**
 * Where a call runs: `shared`, the process every workspace's calls share; `apart`, a process of one isolate for
 * the calls of workspaces suspected of a crash, so that a crash there is charged to the right one.
 */
interface Lane {
  name: 'shared' | 'apart';
  poolSize?: number;
  child?: SandboxChild;
  idleTimer?: NodeJS.Timeout;
}

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
  lane: Lane;
  proc: ChildProcess;
  ready: Promise<void>;
  /** Contexts it created and reused so far (from its last answer). */
  contexts: ContextCounts;
  /** Calls begun and not ended. */
  calls: number;
}

/** What the crash budget has done (metrics). */
export interface CrashStats {
  /** The sandbox process stopped while code ran in it. */
  stops: number;
  /** Of those, stops charged to one workspace (its calls alone were running). */
  charged: number;
  /** Calls refused because their workspace was paused. */
  refused: number;
}

export class ProcessSandbox implements SandboxPort {
  private readonly shared: Lane;
  private readonly apart: Lane = { name: 'apart', poolSize: 1 };
  private readonly budget: CrashBudget;
  private stops = 0;
  private refused = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly parkWaiters = new Map<number, () => void>();
  private nextId = 1;
  private nextRun = 1;
  /** Runs that have sent a call to the sandbox process, by their signal: pure code no longer applies to them. */
  private readonly runIds = new WeakMap<AbortSignal, number>();
  private disposed = false;
  private pureCalls = 0;
  /** Contexts counted by sandbox processes that have stopped. */
  private readonly stoppedCounts: ContextCounts = { created: 0, reused: 0 };
  private readonly pureCode: boolean;
  private readonly idleMs: number;

  constructor(private readonly opts: ProcessSandboxOptions = {}) {
    this.pureCode = opts.pureCode ?? true;
    this.idleMs = opts.idleMs ?? 60_000;
    this.shared = { name: 'shared', poolSize: opts.poolSize };
    this.budget = new CrashBudget(opts.crashBudget);
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
    let { created, reused } = this.stoppedCounts;
    for (const child of this.children()) {
      created += child.contexts.created;
      reused += child.contexts.reused;
    }
    return { created, reused, pure: this.pureCalls };
  }

  get crashStats(): Readonly<CrashStats> {
    return { stops: this.stops, charged: this.budget.chargedCrashes, refused: this.refused };
  }

  /** The shared sandbox process's pid while one runs (tests, diagnostics). */
  get pid(): number | undefined {
    return this.shared.child?.proc.pid;
  }

  /** The pid of the process running suspected workspaces' calls apart, while one runs (tests, diagnostics). */
  get apartPid(): number | undefined {
    return this.apart.child?.proc.pid;
  }

  /** Resolves once the sandbox process has wiped and parked the contexts of runs that ended (tests). */
  async parked(): Promise<void> {
    await Promise.all(this.children().map((child) => {
      const id = this.nextId++;
      return new Promise<void>((resolve) => {
        this.parkWaiters.set(id, resolve);
        void child.ready.then(() => this.send(child, { t: 'parked', id }), () => resolve());
      });
    }));
  }

  /** Stops the sandbox process; later calls fail. */
  dispose(): void {
    this.disposed = true;
    for (const lane of [this.shared, this.apart]) {
      clearTimeout(lane.idleTimer);
      const child = lane.child;
      lane.child = undefined;
      if (child) this.stop(child, new SandboxError('the sandbox has been shut down'));
    }
  }

  private children(): SandboxChild[] {
    return [this.shared.child, this.apart.child].filter((c): c is SandboxChild => c !== undefined);
  }

  /** The lane for `tenant`'s next call, or the error refusing it while its workspace is paused. */
  private laneFor(tenant: string): Lane | SandboxError {
    const pause = this.budget.pause(tenant);
    if (pause) {
      this.refused++;
      return new SandboxError(
        `code that needs an isolate is refused in this workspace for ${Math.ceil(pause.remainingMs / 1000)} s more: `
        + `its code stopped the sandbox process ${pause.crashes} times by using more memory than its limit allows`,
      );
    }
    return this.budget.suspected(tenant) ? this.apart : this.shared;
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
    const lane = this.laneFor(tenant);
    if (lane instanceof SandboxError) throw lane;
    const child = this.childProcess(lane);
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
        // To the processes of the moment: one started since may hold a context of the run too.
        for (const child of this.children()) this.send(child, { t: 'end', runId: id, reason: abortMessage(signal) });
      }, { once: true });
    }
    return runId;
  }

  private childProcess(lane: Lane): SandboxChild {
    if (lane.child) return lane.child;
    const { log: _log, idleMs: _idle, pureCode: _pure, crashBudget: _budget, ...rest } = this.opts;
    const options: SandboxProcessOptions = { ...rest, poolSize: lane.poolSize };
    // --no-node-snapshot: isolated-vm needs it on Node 20 and later. A young generation of 1 MB (the flag reaches
    // the isolates too): 99 against 134 MB after 4,000 calls, calls/s the same (docs/architecture.md, The sandbox process).
    const proc = startModuleProcess(import.meta.url, 'sandbox-process', [JSON.stringify(options)], {
      execArgv: ['--no-node-snapshot', '--max-semi-space-size=1'],
    });
    let ready!: () => void;
    let failed!: (e: Error) => void;
    const child: SandboxChild = {
      lane,
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
      if (lane.child === child) lane.child = undefined;
      this.stoppedCounts.created += child.contexts.created;
      this.stoppedCounts.reused += child.contexts.reused;
      const lost = [...this.pending.entries()].filter(([, p]) => p.child === child);
      const started = lost.filter(([, p]) => p.started);
      if (started.length > 0) {
        // Code was running: one of these calls ended the process (a stop of ours fails its calls first).
        this.stops++;
        this.budget.recordCrash(started.map(([, p]) => p.msg.tenant));
      }
      if (lost.length > 0 || (sig !== null && sig !== 'SIGTERM')) {
        this.opts.log?.warn({
          code, signal: sig, lane: lane.name, failedCalls: started.length, resentCalls: lost.length - started.length,
          workspaces: [...new Set(started.map(([, p]) => p.msg.tenant))],
        }, 'the sandbox process stopped; the next call starts a new one');
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
    lane.child = child;
    return child;
  }

  private onMessage(child: SandboxChild, msg: FromSandbox): void {
    switch (msg.t) {
      case 'done':
        child.contexts = msg.contexts;
        this.settle(msg.id, (p) => {
          // JSON.stringify's text always parses; guarded all the same, since a throw here would end the server.
          let value: unknown;
          try {
            value = msg.json === undefined ? undefined : JSON.parse(msg.json);
          } catch (err) {
            p.reject(new SandboxError(`the returned value could not be read: ${err instanceof Error ? err.message : String(err)}`, msg.logs));
            return;
          }
          p.resolve({ value, logs: msg.logs });
        });
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
    clearTimeout(child.lane.idleTimer);
  }

  private letGo(child: SandboxChild): void {
    if (--child.calls > 0) return;
    child.proc.unref();
    child.proc.channel?.unref();
    if (child === child.lane.child) this.armIdle(child.lane);
  }

  /**
   * Sends calls that never ran in a stopped process to a new one, in the lane each workspace has now (the
   * crash may have just made it a suspect, or paused it).
   */
  private resend(stopped: SandboxChild, calls: [number, Pending][]): void {
    if (calls.length === 0) return;
    if (this.disposed) {
      this.failCalls(stopped, new SandboxError('the sandbox has been shut down'));
      return;
    }
    for (const [id, p] of calls) {
      const lane = this.laneFor(p.msg.tenant);
      if (lane instanceof SandboxError) {
        this.settle(id, (q) => q.reject(lane));
        continue;
      }
      const next = this.childProcess(lane);
      p.child = next;
      this.hold(next);
      stopped.calls--;
      next.ready.then(
        () => {
          if (this.pending.get(id) === p) this.send(next, p.msg);
        },
        (err: unknown) => this.settle(id, (q) => q.reject(err instanceof Error ? err : new SandboxError(String(err)))),
      );
    }
  }

  private failCalls(child: SandboxChild, err: Error): void {
    for (const [id, p] of this.pending) if (p.child === child) this.settle(id, (q) => q.reject(err));
  }

  /** Lets the sandbox process go after `idleMs` without a call: an idle server holds no isolate. */
  private armIdle(lane: Lane): void {
    clearTimeout(lane.idleTimer);
    lane.idleTimer = setTimeout(() => {
      const child = lane.child;
      if (!child || child.calls > 0) return;
      lane.child = undefined;
      this.stop(child, new SandboxError('the sandbox process was let go while idle'));
    }, this.idleMs);
    lane.idleTimer.unref();
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
