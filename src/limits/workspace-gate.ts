import { HttpError } from '../http/errors.js';

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

  constructor(
    private readonly perWorkspace = 4,
    // Generous: runs wait here too (a table or knowledge block in many concurrent runs of one workspace),
    // and the API's rate limits already bound what a client can send.
    private readonly maxWaiting = 1_000,
  ) {
    if (!Number.isSafeInteger(perWorkspace) || perWorkspace < 1) throw new Error(`perWorkspace must be a positive integer, got ${perWorkspace}`);
  }

  async run<T>(workspaceId: string, scan: () => Promise<T>): Promise<T> {
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
