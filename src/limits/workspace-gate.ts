import { HttpError } from '../http/errors.js';
import { QUERY_TIMEOUT_CODE } from './query-timeout.js';

/**
 * Caps how many of one workspace's scans (table queries, knowledge searches) run at once in this process.
 * Whatever a statement costs, one tenant then holds at most `perWorkspace` of the database's connections
 * (PostgreSQL) or places in its queue (the embedded database runs one statement at a time), so another
 * tenant's statements wait behind at most that many of its scans, not all it can send. The rest wait
 * their turn in order; past `maxWaiting` waiting, a request is answered 429 (docs/architecture.md,
 * Tables: bounded statements).
 */
export class WorkspaceGate {
  private readonly workspaces = new Map<string, { running: number; waiting: (() => void)[] }>();
  /** Workspaces whose scan ran past the query timeout, and until when their scans are refused. */
  private readonly cooling = new Map<string, number>();

  constructor(
    private readonly perWorkspace = 4,
    // Generous: runs wait here too (a table or knowledge block in many concurrent runs of one workspace),
    // and the API's rate limits already bound what a client can send.
    private readonly maxWaiting = 1_000,
    /**
     * After one of a workspace's scans is stopped by the query timeout (a 503 `QUERY_TIMEOUT`), its scans are
     * refused this long: on the embedded database each such scan held every tenant's statements for the whole
     * timeout and then cost a restart, so a tenant sending them back to back would hold the database most of
     * the time. 0: no cool-down.
     */
    private readonly cooldownMs = 0,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isSafeInteger(perWorkspace) || perWorkspace < 1) throw new Error(`perWorkspace must be a positive integer, got ${perWorkspace}`);
  }

  async run<T>(workspaceId: string, scan: () => Promise<T>): Promise<T> {
    this.refuseWhileCooling(workspaceId);
    try {
      return await this.admitted(workspaceId, scan);
    } catch (err) {
      if (this.cooldownMs > 0 && err instanceof HttpError && err.extra.code === QUERY_TIMEOUT_CODE) {
        const now = this.now();
        for (const [id, until] of this.cooling) if (until <= now) this.cooling.delete(id);
        this.cooling.set(workspaceId, now + this.cooldownMs);
      }
      throw err;
    }
  }

  private refuseWhileCooling(workspaceId: string): void {
    const until = this.cooling.get(workspaceId);
    if (until === undefined) return;
    const left = until - this.now();
    if (left <= 0) {
      this.cooling.delete(workspaceId);
      return;
    }
    const seconds = Math.ceil(left / 1000);
    throw new HttpError(429, `A query of this workspace ran past its time and was stopped; its queries are refused for ${seconds} s more`,
      { code: 'QUERY_COOLDOWN', retryable: true, retryAfterSeconds: seconds }, { 'Retry-After': String(seconds) });
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
