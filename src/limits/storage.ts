import type { Queryable } from '../db/database.js';
import { lockWorkspace } from '../db/workspace-lock.js';
import { HttpError } from '../http/errors.js';

/**
 * Bytes a workspace stores in one area (table rows, documents, files): a query of one row and one number whose
 * only parameter, `$1`, is the workspace id. The areas' queries are summed in one statement, read inside the
 * caller's transaction (on the embedded database each statement there holds the only connection), so each
 * must stay cheap: a sum over a counter kept per table, file or document, never over every row a thing holds.
 */
export interface StorageSource { sql: string }

/**
 * The storage limit of a workspace in bytes; undefined when limits are off. It reads through `q`, the
 * writer's open transaction: on PGlite any other query would wait for that transaction to end.
 */
export type StorageQuota = (workspaceId: string, q: Queryable) => Promise<number | undefined>;

/** What an area that stores bytes needs from limits: a check inside its own write transaction. */
export interface StorageGuard {
  /**
   * Call inside the write's transaction after the area's own byte counters include the write.
   * Throws a 403 STORAGE_LIMIT_EXCEEDED error (rolling the transaction back) when the workspace is now
   * over its plan's storage. Growing writes of one workspace take a lock here until their transaction ends, so
   * concurrent writes cannot each pass on a sum that misses the other's bytes. Writes that add nothing (`addedBytes <= 0`: a delete, an update that does not grow)
   * always pass; an area that wants a write adding nothing countable refused while the workspace is over its
   * limit (a new knowledge base) calls `checkRoom(q, id, 0)` (docs/architecture.md, Where limits are enforced).
   */
  checkAfterWrite(q: Queryable, workspaceId: string, addedBytes: number): Promise<void>;
  /**
   * Before a write that will add `bytes` (work that is costly to redo first, such as embedding a document's
   * chunks): throws the same 403 when the workspace has no room for them. Not a reservation: the write
   * itself is checked again by `checkAfterWrite`. With 0 (before or after a write): refuses while the
   * workspace stores more than its plan allows.
   */
  checkRoom(q: Queryable, workspaceId: string, bytes: number): Promise<void>;
  /** Total bytes the workspaces store across every area. */
  used(q: Queryable, workspaceIds: string[]): Promise<number>;
}

/** The 403 of a refused write; the figures are kept for callers that explain the refusal elsewhere (a failed ingest). */
export class StorageLimitExceeded extends HttpError {
  constructor(
    readonly addedBytes: number,
    readonly limitBytes: number,
    /** What the workspace stored before the write. */
    readonly usedBytes: number,
  ) {
    const free = Math.max(0, limitBytes - usedBytes);
    super(
      403,
      usedBytes > limitBytes
        ? `Storage limit exceeded: the workspace stores ${usedBytes} bytes, more than its plan's ${limitBytes}; delete data to free space before adding more (this write adds ${Math.max(0, addedBytes)} bytes)`
        : `Storage limit exceeded: this write needs ${addedBytes} more bytes and the workspace's plan allows ${limitBytes} bytes (${free} free)`,
      { code: 'STORAGE_LIMIT_EXCEEDED' },
    );
  }

  get freeBytes(): number {
    return Math.max(0, this.limitBytes - this.usedBytes);
  }
}

export function storageLimitError(addedBytes: number, quota: number, usedAfter: number): StorageLimitExceeded {
  return new StorageLimitExceeded(addedBytes, quota, usedAfter - addedBytes);
}

/** Sums every area's bytes (the sources are handed in by the composition root) against the plan's quota. */
export class StorageAccounting implements StorageGuard {
  /** One statement summing every area's query for the workspace `$1`. */
  private readonly sumSql: string;

  constructor(
    sources: readonly StorageSource[],
    private readonly quota: StorageQuota,
    /**
     * Transactions may run at once (PostgreSQL): growing writes then lock their workspace before summing. The
     * embedded database runs one transaction at a time, so the lock would be one more statement for nothing.
     */
    private readonly opts: { concurrentWriters: boolean } = { concurrentWriters: true },
  ) {
    const terms = sources.map((s) => `COALESCE((${s.sql})::float8, 0)`);
    this.sumSql = `SELECT ${terms.length > 0 ? terms.join(' + ') : '0::float8'} AS n`;
  }

  async used(q: Queryable, workspaceIds: string[]): Promise<number> {
    const parts = await Promise.all(workspaceIds.map(async (id) => Number((await q.query<{ n: number }>(this.sumSql, [id]))[0]?.n ?? 0)));
    return parts.reduce((total, n) => total + n, 0);
  }

  async checkAfterWrite(q: Queryable, workspaceId: string, addedBytes: number): Promise<void> {
    if (addedBytes <= 0) return;
    const quota = await this.quota(workspaceId, q);
    if (quota === undefined) return;
    // Two growing writes to different tables or documents lock different counters, and under READ COMMITTED
    // neither sum sees the other's bytes: both would pass and commit over the limit. This lock, held until the
    // transaction ends, makes the later writer's sum (a new statement, so a new snapshot) include the earlier
    // writer's committed bytes.
    if (this.opts.concurrentWriters) await lockWorkspace(q, 'storage', workspaceId);
    const used = await this.used(q, [workspaceId]);
    if (used > quota) throw storageLimitError(addedBytes, quota, used);
  }

  async checkRoom(q: Queryable, workspaceId: string, bytes: number): Promise<void> {
    const quota = await this.quota(workspaceId, q);
    if (quota === undefined) return;
    const used = await this.used(q, [workspaceId]);
    if (used + Math.max(0, bytes) > quota) throw storageLimitError(Math.max(0, bytes), quota, used + Math.max(0, bytes));
  }
}
