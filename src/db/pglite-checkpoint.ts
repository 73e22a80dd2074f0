/**
 * Checkpoints for the embedded database. PostgreSQL checkpoints when its log outgrows `max_wal_size` or
 * `checkpoint_timeout` passes, but both are asked of its checkpointer process (a backend asks only under a
 * postmaster); PGlite's one backend has neither, so it checkpointed only at shutdown. Under steady writes its
 * pg_wal then grew without bound (2.2 GB of 3.8 GB after 1,000,000 gateway completions, bench/RESULTS.md) and a
 * crash would have replayed all of it at the next start. This looks, while statements run, at how far the log
 * has gone past the last checkpoint's redo point and checkpoints beyond a bound. Runs on the database thread,
 * between callers' statements (PGlite's lock), as the VACUUM passes do (pglite-vacuum.ts).
 */
import { DatabaseChore } from './pglite-chore.js';
import type { VacuumTarget } from './pglite-vacuum.js';

export interface CheckpointOptions {
  /** How often to look (ms), when statements ran since the last look. */
  intervalMs: number;
  /** Log since the last checkpoint's redo point past which a checkpoint runs (bytes). */
  maxLogBytes: number;
}

/**
 * 16 MB: opening the database replays the log from the last checkpoint, and 64 MB of it took 7.5 s where rows
 * had large JSON arrays (pglite-worker.ts, RECOVERY_LOG_BYTES); a checkpoint writes at most the 16 MB of shared
 * buffers. Looked at every second: the gateway under load writes about 5 MB of log a second.
 */
export const DEFAULT_CHECKPOINTS: CheckpointOptions = { intervalMs: 1_000, maxLogBytes: 16 * 1024 * 1024 };

export class EmbeddedCheckpoints extends DatabaseChore {
  constructor(
    private readonly db: VacuumTarget,
    private readonly opts: CheckpointOptions,
    onError: (err: unknown) => void,
  ) {
    super(opts.intervalMs, 1, onError);
  }

  protected async run(): Promise<void> {
    const { rows } = await this.db.query<{ behind: string }>(
      'SELECT (pg_current_wal_insert_lsn() - (SELECT redo_lsn FROM pg_control_checkpoint()))::text AS behind',
    );
    if (!this.stopped && Number(rows[0]?.behind ?? 0) > this.opts.maxLogBytes) await this.db.exec('CHECKPOINT');
  }
}
