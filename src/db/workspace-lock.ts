import type { Queryable } from './database.js';

/**
 * The per-workspace counts and sums that a write checks inside its own transaction. Under READ COMMITTED two
 * concurrent writers each count without the other's uncommitted row, both pass, and the workspace ends one
 * past its bound; the lock makes the later writer wait, and its count (a new statement, so a new snapshot)
 * sees the earlier writer's row. Each bound has its own lock space (the first key of the two-key form), apart
 * from the single-key locks of migrations and bootstrap.
 */
export const WORKSPACE_LOCKS = {
  tables: 7305,
  storage: 7306,
  secrets: 7307,
  connectors: 7308,
  apiKeys: 7309,
} as const;

export type WorkspaceLock = keyof typeof WORKSPACE_LOCKS;

/**
 * Holds `which` lock of `ownerId` (a workspace's id; for personal API keys, their user's) until the transaction
 * of `q` ends. On the embedded database transactions already run one at a time: the lock is then harmless.
 */
export async function lockWorkspace(q: Queryable, which: WorkspaceLock, ownerId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [WORKSPACE_LOCKS[which], ownerId]);
}
