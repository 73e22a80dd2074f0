import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';

/**
 * Write locks of a table (the reference's `locks` object): each kind of change a locked table refuses with 423
 * `{error, lock}`. Stored as the `tables.locked` array (migration 0040); set by workspace admins only, since a
 * lock any writer could lift would protect nothing (docs/architecture.md, Tables).
 */

export const LOCK_KINDS = ['schema', 'insert', 'update', 'delete'] as const;
export type LockKind = (typeof LOCK_KINDS)[number];

/** The wire form, as the reference names it. */
export interface PublicLocks {
  schemaLocked: boolean;
  insertLocked: boolean;
  updateLocked: boolean;
  deleteLocked: boolean;
}

const FLAG: Record<LockKind, keyof PublicLocks> = {
  schema: 'schemaLocked', insert: 'insertLocked', update: 'updateLocked', delete: 'deleteLocked',
};

const WHAT: Record<LockKind, string> = {
  schema: 'its columns cannot be added, changed or deleted',
  insert: 'rows cannot be inserted',
  update: 'rows cannot be updated',
  delete: 'rows (and the table) cannot be deleted',
};

export const publicLocks = (locked: readonly string[]): PublicLocks => ({
  schemaLocked: locked.includes('schema'),
  insertLocked: locked.includes('insert'),
  updateLocked: locked.includes('update'),
  deleteLocked: locked.includes('delete'),
});

/** The locked kinds after a change that names only the flags it sets (the others keep their state). */
export function applyLockChange(locked: readonly string[], change: Partial<PublicLocks>): LockKind[] {
  return LOCK_KINDS.filter((k) => change[FLAG[k]] ?? locked.includes(k));
}

/** Throws the 423 of `kind` when the table is locked against it. */
export function refuseLocked(locked: readonly string[], kind: LockKind): void {
  if (locked.includes(kind)) {
    throw new HttpError(423, `Table is locked: ${WHAT[kind]} (${FLAG[kind]}). A workspace admin can unlock it`, { lock: kind });
  }
}

/** Stores the locks of a table the caller has already found in its workspace (and holds locked). */
export async function setLocked(q: Queryable, tableId: string, locked: LockKind[]): Promise<void> {
  await q.query('UPDATE tables SET locked = $2::text[], updated_at = now() WHERE id = $1', [tableId, locked]);
}
