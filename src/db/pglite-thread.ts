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
import type { PgliteActivity, PgliteReply, PgliteRequest, PgliteWorkerData, WasmModule, WireError } from './pglite-worker.js';
import { DEFAULT_VACUUM, type VacuumOptions } from './pglite-vacuum.js';
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
}

/**
 * Settings given at start. The default 128 MB of shared buffers is most of the idle memory and buys nothing at
 * this size. The WAL: PGlite checkpoints only when the WAL reaches max_wal_size (default 1 GB) or every 5
 * minutes, so under steady writes pg_wal alone could hold a gigabyte of the data directory; 64 MB bounds it
 * (docs/architecture.md, "Run-log retention").
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

type Pending = { resolve: (value: unknown) => void; reject: (err: unknown) => void };
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

export async function connectPglite(opts: PgliteOptions): Promise<Database> {
  const data: PgliteWorkerData = {
    dataDir: opts.dataDir,
    fsync: opts.fsync ?? true,
    loadDataDir: opts.loadDataDir ? ownBuffer(opts.loadDataDir) : undefined,
    settings: SETTINGS,
    binaries: await pgliteBinaries(),
    vacuum: opts.vacuum === false ? null : { ...DEFAULT_VACUUM, ...opts.vacuum },
  };
  const worker: Worker = startModuleWorker(import.meta.url, 'pglite-worker', {
    name: 'weft-pglite', workerData: data, transferList: data.loadDataDir ? [data.loadDataDir] : [],
  });
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let nextTx = 1;
  let gone: Error | undefined;
  let closing: Promise<void> | undefined;
  // Statements and transactions asked for and not finished (metrics: PGlite runs one at a time).
  let busy = 0;

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

  const failAll = (err: Error) => {
    gone ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  worker.on('message', (msg: PgliteReply) => {
    const p = pending.get(msg.id);
    if (!p || 'ready' in msg) return;
    pending.delete(msg.id);
    if (pending.size === 0) worker.unref();
    if (msg.ok) p.resolve(msg.value);
    else p.reject(fromWire(msg.error));
  });
  worker.on('error', (err) => failAll(new Error(`the database thread crashed: ${err.message}`, { cause: err })));
  worker.on('exit', (code) => failAll(new Error(`the database thread exited (code ${code})`)));

  const call = <R>(req: Call): Promise<R> => {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    return new Promise<R>((resolve, reject) => {
      // Referenced only while a call waits: an open but idle database never keeps the process alive.
      if (pending.size === 0) worker.ref();
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ ...req, id });
    });
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

  const db: Database & { dumpDataDir(): Promise<Blob> } = {
    mode: 'pglite',
    query: <T>(text: string, p?: readonly unknown[]) => counted(() => call<T[]>({ op: 'query', text, params: params(p) })),
    exec: (text: string) => counted(() => call<void>({ op: 'exec', text })),
    tx: <T>(fn: (q: Queryable) => Promise<T>) => counted(async () => {
      // Not waited for: the statements go right behind it and wait for PGlite's lock on the database thread,
      // so a transaction holds that lock one round trip less while this thread is busy elsewhere.
      const tx = nextTx++;
      const opened = call<void>({ op: 'begin', tx });
      opened.catch(() => undefined); // its error reaches fn's statements, or the commit below
      const { q, failure } = txQueryable(
        (text, p) => call<unknown[]>({ op: 'query', text, params: p, tx }).then((rows) => ({ rows })),
        (text) => call<void>({ op: 'exec', text, tx }),
      );
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
      await call<void>({ op: 'end', tx, commit: true });
      return value;
    }),
    async ping() {
      await call({ op: 'query', text: 'SELECT 1' });
    },
    poolStats: () => ({ total: 1, idle: busy === 0 ? 1 : 0, waiting: Math.max(0, busy - 1) }),
    async activity() {
      const a = await call<PgliteActivity>({ op: 'stats' });
      return { busySeconds: a.busyMs / 1000, statements: a.statements, fileSyncs: a.fileSyncs };
    },
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
