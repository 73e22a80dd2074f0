/**
 * The embedded database behind the `Database` port, run in its own thread (pglite-worker.ts): SQL executes
 * on the second core while this thread serves HTTP, the engine and the sandbox. Each statement is one
 * message each way; a transaction holds the database thread's lock from `begin` to `end`, so the port's
 * semantics are those of the in-process PGlite: one transaction at a time, other statements wait behind it.
 */
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-module.js';
import type { Database, Queryable } from './database.js';
import type { PgliteReply, PgliteRequest, PgliteWorkerData, WasmModule, WireError } from './pglite-worker.js';
import { SharedActivity } from './pglite-activity.js';
import { DEFAULT_VACUUM, type VacuumOptions } from './pglite-vacuum.js';
import { DEFAULT_CHECKPOINTS, type CheckpointOptions } from './pglite-checkpoint.js';
import { txQueryable } from './tx-queryable.js';

export interface PgliteOptions {
  /** The data directory; undefined keeps the database in memory. */
  dataDir?: string;
  /** A dump to load instead of running initdb; its bytes move to the database thread (see connect.ts). */
  loadDataDir?: Uint8Array;
  /** Sync commits of a data directory to disk (default); false only for disposable ones (WEFT_EMBEDDED_FSYNC). */
  fsync?: boolean;
  /** The database's VACUUM passes (pglite-vacuum.ts): their settings, or false for none. */
  vacuum?: Partial<VacuumOptions> | false;
  /** The database's checkpoints (pglite-checkpoint.ts): their settings, or false for only at shutdown. */
  checkpoints?: Partial<CheckpointOptions> | false;
  /** Told when a bounded transaction ran past its time and the database thread was started again. */
  onRestart?: (event: RestartEvent) => void;
}

/** A restart of the database thread (see `boundedTx` below). */
export interface RestartEvent {
  timeoutMs: number;
  /** The bounded transaction's calls that failed with it (those queued behind it were sent to the new thread). */
  failedCalls: number;
  /** How long opening the database again took; undefined when it failed (`error`). */
  reopenMs?: number;
  error?: Error;
}

/**
 * Settings given at start. The default 128 MB of shared buffers is most of the idle memory and buys nothing at
 * this size. The WAL: PGlite itself never checkpoints before shutdown (pglite-checkpoint.ts does); after a
 * checkpoint, max_wal_size and min_wal_size bound the old segments kept for reuse (docs/architecture.md,
 * "Embedded database").
 */
const SETTINGS: Record<string, string> = { shared_buffers: '16MB', max_wal_size: '64MB', min_wal_size: '32MB' };

/**
 * The bytes as an ArrayBuffer of their own, to move (not copy) to the database thread: a restored archive is the
 * whole database, and each copy of it was one more database's worth of memory. A view into a larger buffer
 * (Node's pool for small Buffers) is copied, so that moving it cannot empty anyone else's bytes.
 */
function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  return whole ? (bytes.buffer as ArrayBuffer) : new Uint8Array(bytes).buffer;
}

type Pending = { resolve: (value: unknown) => void; reject: (err: unknown) => void; req: Call; tx?: number };
type Call = PgliteRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

/** A database error rebuilt with the fields callers read (`code`, `constraint`, ...). */
function fromWire(e: WireError): Error {
  return Object.assign(new Error(e.message), e.fields);
}

// The WebAssembly global, typed here: the project's `lib` has no DOM, where TypeScript declares its values.
const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } }).WebAssembly;

/** PGlite's WebAssembly, compiled once per process and handed to each database thread (compiling it costs ~0.5 s). */
let binaries: Promise<PgliteWorkerData['binaries']> | undefined;
function pgliteBinaries(): Promise<PgliteWorkerData['binaries']> {
  binaries ??= (async () => {
    const dist = path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    const read = (name: string) => fs.readFile(path.join(dist, name));
    const [pglite, initdb, bundle] = await Promise.all([read('pglite.wasm'), read('initdb.wasm'), read('pglite.data')]);
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([wasm.compile(pglite), wasm.compile(initdb)]);
    return { pgliteWasmModule, initdbWasmModule, fsBundle: new Blob([bundle]) };
  })();
  binaries.catch(() => {
    binaries = undefined; // try again next time rather than keep a failure
  });
  return binaries;
}

/**
 * Compiles PGlite's WebAssembly now. A caller that waits for this before loading other modules gets the
 * database thread started at once by `connectPglite`, instead of behind that loading on this thread.
 */
export function compilePglite(): Promise<void> {
  return pgliteBinaries().then(() => undefined);
}

/** Starts a database thread; resolves once it has opened the database. */
async function startThread(data: PgliteWorkerData): Promise<Worker> {
  const worker: Worker = startModuleWorker(import.meta.url, 'pglite-worker', {
    name: 'weft-pglite', workerData: data, transferList: data.loadDataDir ? [data.loadDataDir] : [],
  });
  await new Promise<void>((ready, failed) => {
    const onMessage = (msg: PgliteReply) => {
      settle();
      if ('ready' in msg && msg.ready) ready();
      else failed('ready' in msg && !msg.ready ? fromWire(msg.error) : new Error('the database thread sent an unexpected first message'));
    };
    const onError = (err: Error) => {
      settle();
      failed(err);
    };
    const onExit = (code: number) => onError(new Error(`the database thread exited with code ${code} while starting`));
    const settle = () => {
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
    };
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
  });
  worker.unref();
  return worker;
}

export async function connectPglite(opts: PgliteOptions): Promise<Database> {
  const counters = SharedActivity.allocate();
  const activity = new SharedActivity(counters);
  const data: PgliteWorkerData = {
    dataDir: opts.dataDir,
    fsync: opts.fsync ?? true,
    loadDataDir: opts.loadDataDir ? ownBuffer(opts.loadDataDir) : undefined,
    settings: SETTINGS,
    binaries: await pgliteBinaries(),
    vacuum: opts.vacuum === false ? null : { ...DEFAULT_VACUUM, ...opts.vacuum },
    checkpoints: opts.checkpoints === false ? null : { ...DEFAULT_CHECKPOINTS, ...opts.checkpoints },
    activity: counters,
  };
  let worker = await startThread(data);
  // A database on disk can be opened again by a new thread (its dump, if any, is loaded by then); one in memory
  // would be lost with its thread, so its bounded transactions are never cut short.
  const restartable = opts.dataDir !== undefined;
  const reopen: PgliteWorkerData = { ...data, loadDataDir: undefined };
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let nextTx = 1;
  let gone: Error | undefined;
  let closing: Promise<void> | undefined;
  let restarting: Promise<void> | undefined;
  // Statements and transactions asked for and not finished (metrics: PGlite runs one at a time).
  let busy = 0;

  const failAll = (err: Error) => {
    gone ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const onMessage = (msg: PgliteReply) => {
    const p = pending.get(msg.id);
    if (!p || 'ready' in msg) return;
    pending.delete(msg.id);
    if (pending.size === 0) worker.unref();
    if (msg.ok) p.resolve(msg.value);
    else p.reject(fromWire(msg.error));
  };
  const onError = (err: Error) => failAll(new Error(`the database thread crashed: ${err.message}`, { cause: err }));
  const onExit = (code: number) => failAll(new Error(`the database thread exited (code ${code})`));
  const attach = (w: Worker) => w.on('message', onMessage).on('error', onError).on('exit', onExit);
  attach(worker);

  const post = <R>(req: Call): Promise<R> => {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    return new Promise<R>((resolve, reject) => {
      // Referenced only while a call waits: an open but idle database never keeps the process alive.
      if (pending.size === 0) worker.ref();
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject, req, tx: 'tx' in req ? req.tx : undefined });
      worker.postMessage({ ...req, id });
    });
  };
  // While the database is opened again, calls wait for it instead of failing.
  const call = <R>(req: Call): Promise<R> => (restarting ? restarting.then(() => post<R>(req)) : post<R>(req));

  /**
   * Transaction `offender` held the database past `timeoutMs`: stop the thread in the middle of it and open the
   * database on a new one. PGlite cannot interrupt a statement, so this is the only way to give the database back
   * to everyone else. Every commit made before the transaction began is on disk (the worker's `flushLog`), and
   * nothing else ran while it held PGlite's lock, so nothing a caller was told is lost, and the calls queued
   * behind it never ran: they are sent again, in the order they came, to the new thread. The transaction's own
   * calls fail as a statement timeout (57014).
   */
  const restart = (offender: number, timeoutMs: number) => {
    if (restarting || gone || closing) return;
    const old = worker;
    old.off('message', onMessage).off('error', onError).off('exit', onExit);
    const timedOut = Object.assign(new Error(`canceling statement due to statement timeout (${timeoutMs} ms)`), { code: '57014' });
    let failedCalls = 0;
    for (const [id, p] of pending) {
      if (p.tx !== offender) continue;
      p.reject(timedOut);
      pending.delete(id);
      failedCalls++;
    }
    const started = Date.now();
    restarting = (async () => {
      await old.terminate();
      activity.threadStopped();
      worker = attach(await startThread(reopen));
      if (pending.size > 0) worker.ref();
      for (const [id, p] of pending) worker.postMessage({ ...p.req, id });
    })().then(
      () => {
        restarting = undefined;
        opts.onRestart?.({ timeoutMs, failedCalls, reopenMs: Date.now() - started });
      },
      (err: unknown) => {
        restarting = undefined;
        // As a lost connection (57P01): the callers are told the database is away (a 503), not that they erred.
        const error = Object.assign(new Error(`the embedded database could not be opened again: ${err instanceof Error ? err.message : String(err)}`, { cause: err }),
          { code: '57P01' });
        failAll(error);
        opts.onRestart?.({ timeoutMs, failedCalls, error });
      },
    );
  };

  const counted = async <R>(fn: () => Promise<R>): Promise<R> => {
    busy++;
    try {
      return await fn();
    } finally {
      busy--;
    }
  };
  const params = (p?: readonly unknown[]) => (p ? [...p] : undefined);

  /** A transaction; with `timeoutMs`, one the database takes back after that long (see `restart`). */
  const transaction = <T>(fn: (q: Queryable) => Promise<T>, timeoutMs?: number) => counted(async () => {
    // Not waited for: the statements go right behind it and wait for PGlite's lock on the database thread,
    // so a transaction holds that lock one round trip less while this thread is busy elsewhere.
    const tx = nextTx++;
    const bounded = timeoutMs !== undefined && timeoutMs > 0 && restartable;
    const opened = call<void>({ op: 'begin', tx, bounded });
    // The clock starts once the transaction holds the lock (the answer to its begin), not while it waits.
    let clock: NodeJS.Timeout | undefined;
    // Once its commit is sent the transaction is not stopped: the caller would be told it failed when it may not have.
    let committing = false;
    opened.then(() => {
      if (bounded && !committing) clock = setTimeout(() => committing || restart(tx, timeoutMs), timeoutMs).unref();
    }, () => undefined); // its error reaches fn's statements, or the commit below
    const { q, failure } = txQueryable(
      (text, p) => call<unknown[]>({ op: 'query', text, params: p, tx }).then((rows) => ({ rows })),
      (text) => call<void>({ op: 'exec', text, tx }),
    );
    try {
      let value: T;
      try {
        value = await fn(q);
        await opened;
        const failed = failure();
        if (failed !== undefined) throw failed;
      } catch (err) {
        await call<void>({ op: 'end', tx, commit: false }).catch(() => undefined);
        throw err;
      }
      committing = true;
      await call<void>({ op: 'end', tx, commit: true });
      return value;
    } finally {
      committing = true;
      clearTimeout(clock);
    }
  });

  const db: Database & { dumpDataDir(): Promise<Blob> } = {
    mode: 'pglite',
    query: <T>(text: string, p?: readonly unknown[]) => counted(() => call<T[]>({ op: 'query', text, params: params(p) })),
    exec: (text: string) => counted(() => call<void>({ op: 'exec', text })),
    tx: <T>(fn: (q: Queryable) => Promise<T>) => transaction(fn),
    boundedTx: <T>(timeoutMs: number, fn: (q: Queryable) => Promise<T>) => transaction(fn, timeoutMs),
    async ping() {
      await call({ op: 'query', text: 'SELECT 1' });
    },
    poolStats: () => ({ total: 1, idle: busy === 0 ? 1 : 0, waiting: Math.max(0, busy - 1) }),
    // Read from memory the thread shares: no message, so a scrape never waits behind a statement.
    activity: () => Promise.resolve(activity.read()),
    close() {
      closing ??= (async () => {
        await call({ op: 'close' }).catch(() => undefined);
        failAll(new Error('the database is closed'));
        await worker.terminate();
      })();
      return closing;
    },
    // The test harness's template data directories and `weft backup`.
    dumpDataDir: async () => new Blob([await call<ArrayBuffer>({ op: 'dump' })]),
  };
  return db;
}
