import { HttpError } from '../http/errors.js';
import { QUERY_COOLDOWN_FACTOR, QUERY_TIMEOUT_CODE } from './query-timeout.js';

/**
 * What a scan tells the gate of its use of the database. A scan that never calls `holding` is not charged
 * (knowledge searches, whose statements come between an embedding call).
 */
export interface ScanMeter {
  /**
   * The scan now holds the database: its transaction's first statement was answered, so on the embedded
   * database it has the lock every other statement waits for. Its time from here to its end is charged to the
   * workspace. Time spent waiting for the lock is not: that is another tenant's scan, not this one.
   * Throws the cool-down 429 when the workspace's budget ran out while this scan waited (its earlier scans,
   * admitted in the same burst, held the database first); the caller's transaction then ends before its query.
   */
  holding(): void;
}

/** How much database time a workspace has used, draining as time passes (a leaky bucket). */
interface HeldTime {
  /** Milliseconds charged and not yet drained, as of `at`. */
  level: number;
  at: number;
}

/**
 * Caps how many of one workspace's scans (table queries, knowledge searches) run at once in this process.
 * Whatever a statement costs, one tenant then holds at most `perWorkspace` of the database's connections
 * (PostgreSQL) or places in its queue (the embedded database runs one statement at a time), so another
 * tenant's statements wait behind at most that many of its scans, not all it can send. The rest wait
 * their turn in order; past `maxWaiting` waiting, a request is answered 429 (docs/architecture.md,
 * Tables: bounded statements).
 *
 * With a cool-down, a workspace's scans are also refused for a while (429 `QUERY_COOLDOWN`) after one of them
 * ran out of the query timeout, and once the time its scans held the database passes a budget: one query
 * timeout (the cool-down over QUERY_COOLDOWN_FACTOR) at once, draining at one part in QUERY_COOLDOWN_FACTOR
 * of the time. So a tenant whose scans each stay under the timeout still holds the database a sixth of the
 * time on average, as one whose scans run out of it does.
 */
export class WorkspaceGate {
  private readonly workspaces = new Map<string, { running: number; waiting: (() => void)[] }>();
  /** Workspaces whose scan ran past the query timeout, and until when their scans are refused. */
  private readonly cooling = new Map<string, number>();
  /**
   * Workspaces refused for their budget, and until when: the refusal's `Retry-After` in whole seconds holds, though
   * the level drains below the budget sooner when it was barely over (a scan let in 30 ms after "retry in 1 s").
   */
  private readonly overBudget = new Map<string, number>();
  /** Database time charged to workspaces (scans that said when they took the database: `ScanMeter`). */
  private readonly held = new Map<string, HeldTime>();
  /** Past this many workspaces in `held`, the drained ones are forgotten (then twice as many as remain). */
  private sweepAt = 1_024;
  /** Milliseconds of database time a workspace may hold at once (0: no budget). */
  private readonly heldBudgetMs: number;
  /** Milliseconds of the budget given back per millisecond. */
  private readonly drainRate = 1 / QUERY_COOLDOWN_FACTOR;

  constructor(
    private readonly perWorkspace = 4,
    // Generous: runs wait here too (a table or knowledge block in many concurrent runs of one workspace),
    // and the API's rate limits already bound what a client can send.
    private readonly maxWaiting = 1_000,
    /**
     * After one of a workspace's scans is stopped by the query timeout (a 503 `QUERY_TIMEOUT`), its scans are
     * refused this long: on the embedded database each such scan held every tenant's statements for the whole
     * timeout and then cost a restart, so a tenant sending them back to back would hold the database most of
     * the time. It also sets the budget of database time (the query timeout: this over QUERY_COOLDOWN_FACTOR).
     * 0: no cool-down and no budget.
     */
    private readonly cooldownMs = 0,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isSafeInteger(perWorkspace) || perWorkspace < 1) throw new Error(`perWorkspace must be a positive integer, got ${perWorkspace}`);
    this.heldBudgetMs = cooldownMs / QUERY_COOLDOWN_FACTOR;
  }

  async run<T>(workspaceId: string, scan: (meter: ScanMeter) => Promise<T>): Promise<T> {
    this.refuseWhileCooling(workspaceId);
    return this.admitted(workspaceId, async () => {
      // A scan that waited its turn: the workspace may have used up its budget meanwhile.
      this.refuseWhileCooling(workspaceId);
      let since: number | undefined;
      let timedOut = false;
      try {
        return await scan({
          holding: () => {
            if (since !== undefined) return;
            // Admission saw the budget before the burst's other scans ran; on the embedded database they held it
            // one after another, so without this a burst of `perWorkspace` scans held it that many timeouts.
            this.refuseWhileCooling(workspaceId);
            since = this.now();
          },
        });
      } catch (err) {
        timedOut = this.cooldownMs > 0 && err instanceof HttpError && err.extra.code === QUERY_TIMEOUT_CODE;
        if (timedOut) {
          const now = this.now();
          for (const [id, until] of this.cooling) if (until <= now) this.cooling.delete(id);
          this.cooling.set(workspaceId, now + this.cooldownMs);
        }
        throw err;
      } finally {
        // A scan the timeout stopped is answered by the cool-down, which stands for the time it held.
        if (since !== undefined && !timedOut) this.charge(workspaceId, this.now() - since);
      }
    });
  }

  private refuseWhileCooling(workspaceId: string): void {
    const until = this.cooling.get(workspaceId);
    if (until !== undefined) {
      const left = until - this.now();
      if (left > 0) {
        const seconds = Math.ceil(left / 1000);
        throw cooldown(`A query of this workspace ran past its time and was stopped; its queries are refused for ${seconds} s more`, seconds);
      }
      this.cooling.delete(workspaceId);
    }
    const refusedUntil = this.overBudget.get(workspaceId);
    const now = this.now();
    let seconds = 0;
    if (refusedUntil !== undefined && refusedUntil > now) {
      seconds = Math.ceil((refusedUntil - now) / 1000);
    } else {
      this.overBudget.delete(workspaceId);
      const over = this.heldLevel(workspaceId) - this.heldBudgetMs;
      if (this.heldBudgetMs > 0 && over > 0) {
        seconds = Math.ceil(over / this.drainRate / 1000);
        for (const [id, until] of this.overBudget) if (until <= now) this.overBudget.delete(id);
        this.overBudget.set(workspaceId, now + seconds * 1000);
      }
    }
    if (seconds > 0) {
      throw cooldown(`This workspace's queries held the database for more than ${formatSeconds(this.heldBudgetMs)} s of late `
        + `(a workspace may hold it for 1/${QUERY_COOLDOWN_FACTOR} of the time on average); its queries are refused for ${seconds} s more`, seconds);
    }
  }

  /** The database time charged to a workspace that has not drained yet, in ms. */
  private heldLevel(workspaceId: string): number {
    const h = this.held.get(workspaceId);
    return h ? Math.max(0, h.level - (this.now() - h.at) * this.drainRate) : 0;
  }

  private charge(workspaceId: string, ms: number): void {
    if (this.heldBudgetMs <= 0 || ms <= 0) return;
    const level = this.heldLevel(workspaceId) + ms;
    this.held.set(workspaceId, { level, at: this.now() });
    if (this.held.size > this.sweepAt) {
      for (const id of [...this.held.keys()]) if (this.heldLevel(id) === 0) this.held.delete(id);
      this.sweepAt = Math.max(1_024, 2 * this.held.size);
    }
  }

  private async admitted<T>(workspaceId: string, scan: () => Promise<T>): Promise<T> {
    let w = this.workspaces.get(workspaceId);
    if (!w) {
      w = { running: 0, waiting: [] };
      this.workspaces.set(workspaceId, w);
    }
    if (w.running < this.perWorkspace) {
      w.running++;
    } else {
      if (w.waiting.length >= this.maxWaiting) {
        throw new HttpError(429, `Too many queries of this workspace at once: ${this.perWorkspace} run at a time and ${this.maxWaiting} may wait`,
          { code: 'QUERY_CONCURRENCY_LIMIT', retryable: true, retryAfterSeconds: 1 }, { 'Retry-After': '1' });
      }
      const queue = w.waiting;
      await new Promise<void>((resolve) => queue.push(resolve)); // the slot is handed over, still counted
    }
    try {
      return await scan();
    } finally {
      const next = w.waiting.shift();
      if (next) next();
      else if (--w.running === 0) this.workspaces.delete(workspaceId);
    }
  }

  /** Scans running and waiting for a workspace (for tests and metrics). */
  load(workspaceId: string): { running: number; waiting: number } {
    const w = this.workspaces.get(workspaceId);
    return { running: w?.running ?? 0, waiting: w?.waiting.length ?? 0 };
  }
}

function cooldown(message: string, seconds: number): HttpError {
  return new HttpError(429, message, { code: 'QUERY_COOLDOWN', retryable: true, retryAfterSeconds: seconds }, { 'Retry-After': String(seconds) });
}

const formatSeconds = (ms: number): string => String(Math.round(ms / 100) / 10);
