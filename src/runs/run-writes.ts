import type { Database } from '../db/database.js';
import { GroupCommit } from '../db/group-commit.js';
import type { LimitsService } from '../limits/service.js';
import * as store from './store.js';
import type { ExecutionRow, FinishedExecution, NewExecution } from './store.js';

/**
 * Runs' writes, group-committed (src/db/group-commit.ts): finished sync runs with their base charges,
 * accepted async runs, step records, and final states with their base charges. Each is one statement for a
 * whole batch (one round trip, one commit), and a batch of one is the same statement.
 */
export class RunWrites {
  /** A finished sync run and its base charge; undefined when its id was taken (a repeat). */
  readonly finishedRuns: GroupCommit<{ e: NewExecution; f: FinishedExecution }, store.EndedRun | undefined>;
  /** An accepted async run (its row, queued or, with `leaseMs`, leased to this process); undefined when its id was taken. */
  readonly claims: GroupCommit<NewExecution & { leaseMs?: number }, ExecutionRow | undefined>;
  /** Durable step records of one run, written together; one already recorded is kept. */
  readonly steps: GroupCommit<readonly store.TimedStep[], undefined>;
  /** A queued (or abandoned) async run taken by this worker, with a lease of `leaseMs`; undefined when it is not to be had. */
  readonly leases: GroupCommit<string, ExecutionRow | undefined>;
  /** A run's final state and base charge, fenced by its lease attempt when it has one; undefined when taken over. */
  readonly finishes: GroupCommit<{ id: string; attempt: number | null; f: FinishedExecution }, store.EndedRun | undefined>;

  constructor(db: Database, limits: Pick<LimitsService, 'runCharge'>, leaseMs: number) {
    /**
     * Writes runs with their charges (the usage totals and the reservations admission made follow in the
     * same statement, by the usage_events triggers).
     */
    const ending = async <T>(items: readonly T[], write: (charge: store.RunChargeSql) => Promise<store.EndedRuns>, idOf: (item: T) => string) => {
      const ended = await write(limits.runCharge());
      return items.map((item) => ended.get(idOf(item)));
    };
    this.finishedRuns = batched((runs) => ending(runs, (charge) => store.insertFinishedRuns(db, runs, charge), (r) => r.e.id));
    this.claims = batched(async (runs) => {
      const claimed = await store.claimExecutions(db, runs);
      // An id asked for twice in one batch was claimed by the first asker only.
      return runs.map((r) => {
        const row = claimed.get(r.id);
        claimed.delete(r.id);
        return row;
      });
    });
    this.steps = batched(async (items) => {
      await store.recordSteps(db, items.flat());
      return items.map(() => undefined);
    });
    this.leases = batched(async (ids) => {
      const taken = await store.leaseJobs(db, ids, leaseMs);
      // An id asked for twice in one batch goes to the first asker only: one run, one holder.
      return ids.map((id) => {
        const row = taken.get(id);
        taken.delete(id);
        return row;
      });
    });
    this.finishes = batched((runs) => ending(runs, (charge) => store.finishRuns(db, runs, charge), (r) => r.id));
  }
}

/** A group commit whose single write is its batch write with one item. */
function batched<T, R>(writeBatch: (items: readonly T[]) => Promise<R[]>): GroupCommit<T, R> {
  return new GroupCommit({ writeBatch, writeOne: async (item) => (await writeBatch([item]))[0] });
}
