/**
 * The embedded database's own thread: owns the PGlite instance so that its WebAssembly work (0.3 to 1 ms a
 * statement) runs beside HTTP, the engine and the sandbox instead of on their thread. Started by
 * `connectPglite` (pglite-thread.ts), which speaks the protocol below; PGlite's own lock keeps one
 * transaction at a time, other statements wait behind it exactly as they did in-process.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type PGliteOptions, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { DurableNodeFS, durableStartParams } from './pglite-durable-fs.js';
import { PreparedStatements } from './pglite-prepared.js';
import { EmbeddedVacuum, type VacuumOptions } from './pglite-vacuum.js';
import { EmbeddedCheckpoints, type CheckpointOptions } from './pglite-checkpoint.js';
import { SharedActivity } from './pglite-activity.js';

/** A compiled WebAssembly module, as PGlite's options name it (the build's `lib` has no WebAssembly types). */
export type WasmModule = NonNullable<PGliteOptions['pgliteWasmModule']>;

export interface PgliteWorkerData {
  dataDir?: string;
  /** Sync commits to disk (pglite-durable-fs.ts); false only where the directory is disposable (WEFT_EMBEDDED_FSYNC). */
  fsync: boolean;
  /** A dump made by `dumpDataDir`, loaded instead of running initdb. */
  loadDataDir?: ArrayBuffer;
  /** PostgreSQL settings given at start (`-c name=value`). */
  settings: Record<string, string>;
  /** PGlite's WebAssembly modules and file bundle, compiled and read once by the parent process. */
  binaries?: { pgliteWasmModule: WasmModule; initdbWasmModule: WasmModule; fsBundle: Blob };
  /** The database's own VACUUM passes (pglite-vacuum.ts); null: none. */
  vacuum: VacuumOptions | null;
  /** The database's own checkpoints (pglite-checkpoint.ts); null: only at shutdown, as PGlite alone does. */
  checkpoints: CheckpointOptions | null;
  /** The activity counters this thread adds to (pglite-activity.ts); the same memory for every thread in turn. */
  activity: SharedArrayBuffer;
}

export type PgliteRequest =
  | { id: number; op: 'query'; text: string; params?: unknown[]; tx?: number }
  | { id: number; op: 'exec'; text: string; tx?: number }
  /**
   * `tx` is chosen by the caller, which may send the transaction's statements before this is answered. A
   * `bounded` one may be cut short by stopping this thread (pglite-thread.ts), so it first makes every commit
   * so far durable (see `flushLog`).
   */
  | { id: number; op: 'begin'; tx: number; bounded?: boolean }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'dump' }
  | { id: number; op: 'close' };

/** A database error as plain data: message plus the fields callers read (code, constraint, ...). */
export interface WireError { message: string; fields: Record<string, string | undefined> }

export type PgliteReply =
  | { id: number; ok: true; value?: unknown }
  | { id: number; ok: false; error: WireError }
  | { id: 0; ready: true }
  | { id: 0; ready: false; error: WireError };

const ERROR_FIELDS = ['code', 'constraint', 'detail', 'hint', 'table', 'column', 'schema', 'severity', 'dataType', 'where'] as const;

/**
 * The archive as the Blob that PGlite's `loadDataDir` takes. PGlite reads it once, with `arrayBuffer()`, so that
 * answers with the buffer moved here: a Blob made of it would have cost two more copies of the whole database
 * (the Blob's, and the read's). Should PGlite read it any other way it gets no bytes, and the load fails.
 */
class ArchiveBlob extends Blob {
  readonly #archive: ArrayBuffer;

  constructor(archive: ArrayBuffer) {
    super([]);
    this.#archive = archive;
  }

  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#archive);
  }
}

function toWire(err: unknown): WireError {
  const e = err as Record<string, unknown> | null;
  const fields: Record<string, string | undefined> = {};
  for (const f of ERROR_FIELDS) if (typeof e?.[f] === 'string') fields[f] = e[f];
  return { message: err instanceof Error ? err.message : String(err), fields };
}

/** Thrown inside a transaction's callback to make PGlite roll it back. */
class Rollback extends Error {}

interface OpenTx { t: Transaction; finish: (commit: boolean) => void }

const port = parentPort;
if (!port) throw new Error('pglite-worker must run in a worker thread');
const init = workerData as PgliteWorkerData;
/**
 * Transactions by the caller's id, from their `begin` on: a statement sent right behind its `begin` waits
 * here for PGlite's lock instead of failing, so a transaction costs no round trip to open.
 */
const transactions = new Map<number, Promise<OpenTx>>();
/** Each transaction's end (commit or rollback), kept from its start so that no failure goes unobserved. */
const outcomes = new Map<number, Promise<void>>();
let db: PGlite;
let prepared: PreparedStatements;
let vacuum: EmbeddedVacuum | undefined;
let checkpoints: EmbeddedCheckpoints | undefined;
/** Busy time (statements, transactions and VACUUM), statements run for callers, files synced (commits, checkpoints). */
const busy = new SharedActivity(init.activity);
let durableFs: DurableNodeFS | undefined;

/**
 * Opens transaction `id`; resolves once PGlite holds it (its lock taken). The callback then waits for `end`.
 * PGlite commits when the callback returns and rolls back when it throws.
 */
function begin(id: number, bounded: boolean): Promise<void> {
  if (transactions.has(id)) return Promise.reject(new Error(`transaction ${id} is already open`));
  const opening = new Promise<OpenTx>((opened, failed) => {
    let didOpen = false;
    const done = db.transaction(async (t) => {
      if (bounded) await flushLog(t);
      const commit = await new Promise<boolean>((finish) => {
        didOpen = true;
        opened({ t, finish });
      });
      if (!commit) throw new Rollback();
    });
    outcomes.set(id, done);
    done.catch((err: unknown) => {
      if (!didOpen) failed(err); // BEGIN itself failed
    }).finally(() => outcomes.delete(id));
  });
  transactions.set(id, opening);
  // A BEGIN that failed stays in the map until the caller's `end`, so its statements get its error.
  return opening.then(() => undefined);
}

/**
 * Writes the log of every commit made so far to disk, inside transaction `t` (PGlite's lock held, so no commit
 * slips in after it). A commit made with `synchronous_commit` off (async-commit.ts) leaves its log records in
 * this thread's memory until a later commit flushes them; stopping the thread would lose them, while the
 * parent's state goes on as if they were there. When the log is behind, a commit that wrote to the log (a
 * transactional logical message, which nothing reads; a transaction that wrote nothing flushes nothing) brings
 * it to disk, and a new transaction block takes over.
 */
async function flushLog(t: Transaction): Promise<void> {
  const [row] = (await t.exec(`SELECT pg_current_wal_insert_lsn() > pg_current_wal_flush_lsn() AS behind,
    pg_current_wal_insert_lsn() - (SELECT redo_lsn FROM pg_control_checkpoint()) > ${RECOVERY_LOG_BYTES} AS long_recovery`)).at(-1)?.rows ?? [];
  const r = row as { behind?: boolean; long_recovery?: boolean } | undefined;
  // A checkpoint also flushes the log up to it.
  if (r?.long_recovery) await t.exec('CHECKPOINT');
  else if (r?.behind) await t.exec("SELECT pg_logical_emit_message(true, 'weft', 'flush'); COMMIT; BEGIN");
}

/**
 * Log since the last checkpoint past which a bounded transaction checkpoints first. Opening the database again
 * replays the log from the last checkpoint: 64 MB of it (max_wal_size) took 7.5 s where rows had large json
 * arrays (each element an entry of the GIN index), against about 1 s with none.
 */
const RECOVERY_LOG_BYTES = 8 * 1024 * 1024;

/** Commits or rolls back; rejects with the error of a commit that failed (or of a BEGIN that did). */
async function end(tx: number, commit: boolean): Promise<void> {
  const opening = transactions.get(tx);
  if (!opening) throw new Error(`no open transaction ${tx}`);
  transactions.delete(tx);
  const open = await opening;
  const outcome = outcomes.get(tx);
  open.finish(commit);
  try {
    await outcome;
  } catch (err) {
    if (!(err instanceof Rollback)) throw err;
  }
}

async function on(tx: number | undefined): Promise<Transaction | PGlite> {
  if (tx === undefined) return db;
  const opening = transactions.get(tx);
  if (!opening) throw new Error(`no open transaction ${tx}`);
  return (await opening).t;
}

async function handle(req: PgliteRequest): Promise<unknown> {
  switch (req.op) {
    case 'query': {
      busy.statementRan();
      vacuum?.noteStatement();
      checkpoints?.noteStatement();
      // Without parameters, the simple protocol: one call into PGlite instead of the extended protocol's
      // parse, bind and execute (measured: SELECT 1 in 30 us against 55 to 65 us).
      const target = await on(req.tx);
      if (!req.params || req.params.length === 0) return (await target.exec(req.text)).at(-1)?.rows ?? [];
      // With parameters, a named prepared statement: planned once, not on every call (pglite-prepared.ts).
      if (target !== db && (target as Transaction).closed) throw new Error('Transaction is closed');
      return (await prepared.query(req.text, req.params, target !== db)).rows;
    }
    case 'exec':
      busy.statementRan();
      vacuum?.noteStatement();
      checkpoints?.noteStatement();
      await (await on(req.tx)).exec(req.text);
      return undefined;
    case 'begin':
      return begin(req.tx, req.bounded === true);
    case 'end':
      return end(req.tx, req.commit);
    case 'dump': {
      const blob = await db.dumpDataDir('none');
      return blob.arrayBuffer();
    }
    case 'close':
      await vacuum?.stop();
      await checkpoints?.stop();
      await db.close();
      return undefined;
  }
}

port.on('message', (req: PgliteRequest) => {
  busy.track(() => handle(req)).then(
    (value) => {
      const reply: PgliteReply = { id: req.id, ok: true, value };
      port.postMessage(reply, value instanceof ArrayBuffer ? [value] : []);
    },
    (err: unknown) => port.postMessage({ id: req.id, ok: false, error: toWire(err) } satisfies PgliteReply),
  );
});

try {
  // On disk the files are synced (pglite-durable-fs.ts) unless the operator turned that off; in memory there
  // is nothing to sync.
  durableFs = init.dataDir && init.fsync ? new DurableNodeFS(init.dataDir, () => busy.fileSynced()) : undefined;
  const startParams = durableFs ? durableStartParams() : [...PGlite.defaultStartParams];
  for (const [name, value] of Object.entries(init.settings)) startParams.push('-c', `${name}=${value}`);
  db = await PGlite.create({
    ...(durableFs ? { fs: durableFs } : { dataDir: init.dataDir }),
    extensions: { vector },
    loadDataDir: init.loadDataDir ? new ArchiveBlob(init.loadDataDir) : undefined,
    relaxedDurability: false,
    startParams,
    ...init.binaries,
  });
  prepared = new PreparedStatements(db);
  const pglite = db;
  const tracked = {
    exec: (sql: string) => busy.track(() => pglite.exec(sql)),
    query: <T>(sql: string) => busy.track(() => pglite.query<T>(sql)),
  };
  // No logger on this thread; a failed pass or check is tried again at the next interval.
  const warn = (what: string) => (err: unknown) => console.warn(`weft: ${what} of the embedded database failed: ${err instanceof Error ? err.message : String(err)}`);
  if (init.vacuum) {
    vacuum = new EmbeddedVacuum(tracked, init.vacuum, warn('VACUUM'));
    vacuum.start();
  }
  if (init.checkpoints) {
    checkpoints = new EmbeddedCheckpoints(tracked, init.checkpoints, warn('a checkpoint'));
    checkpoints.start();
  }
  port.postMessage({ id: 0, ready: true } satisfies PgliteReply);
} catch (err) {
  port.postMessage({ id: 0, ready: false, error: toWire(err) } satisfies PgliteReply);
}
