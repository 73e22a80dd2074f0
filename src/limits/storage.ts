import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';

/** Bytes a workspace stores in one area (table rows, documents, files), read inside the caller's transaction. */
export type StorageSource = (q: Queryable, workspaceId: string) => Promise<number>;

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
   * over its plan's storage. Writes that free space (`addedBytes <= 0`) always pass.
   */
  checkAfterWrite(q: Queryable, workspaceId: string, addedBytes: number): Promise<void>;
  /** Total bytes the workspaces store across every area. */
  used(q: Queryable, workspaceIds: string[]): Promise<number>;
}

export function storageLimitError(addedBytes: number, quota: number, usedAfter: number): HttpError {
  const free = Math.max(0, quota - (usedAfter - addedBytes));
  return new HttpError(
    403,
    `Storage limit exceeded: this write needs ${addedBytes} more bytes and the workspace's plan allows ${quota} bytes (${free} free)`,
    { code: 'STORAGE_LIMIT_EXCEEDED' },
  );
}

/** Sums every area's bytes (the sources are handed in by the composition root) against the plan's quota. */
export class StorageAccounting implements StorageGuard {
  constructor(
    private readonly sources: readonly StorageSource[],
    private readonly quota: StorageQuota,
  ) {}

  async used(q: Queryable, workspaceIds: string[]): Promise<number> {
    // Sent together: inside a transaction they still run one after another, but the transaction waits for
    // one round trip instead of one per source (on the embedded database it holds the only connection).
    const parts = await Promise.all(workspaceIds.flatMap((id) => this.sources.map((source) => source(q, id))));
    return parts.reduce((total, n) => total + n, 0);
  }

  async checkAfterWrite(q: Queryable, workspaceId: string, addedBytes: number): Promise<void> {
    if (addedBytes <= 0) return;
    const quota = await this.quota(workspaceId, q);
    if (quota === undefined) return;
    const used = await this.used(q, [workspaceId]);
    if (used > quota) throw storageLimitError(addedBytes, quota, used);
  }
}
