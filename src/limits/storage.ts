import type { Queryable } from '../db/database.js';

/** Bytes a workspace stores in one area (table rows, documents, files). Areas register theirs. */
export type StorageSource = (q: Queryable, workspaceId: string) => Promise<number>;

const sources: StorageSource[] = [];

export function registerStorageSource(source: StorageSource): void {
  if (!sources.includes(source)) sources.push(source);
}

export async function storageUsed(q: Queryable, workspaceIds: string[]): Promise<number> {
  let total = 0;
  for (const id of workspaceIds) for (const source of sources) total += await source(q, id);
  return total;
}

/** The storage limit of a workspace, in bytes; undefined when limits are off. */
export type StorageQuota = (workspaceId: string) => Promise<number | undefined>;

const quotas = new WeakMap<object, StorageQuota>();

/** Set by the limits area for its database, so areas writing data can enforce the plan's storage. */
export function registerStorageQuota(db: object, quota: StorageQuota): void {
  quotas.set(db, quota);
}

export async function storageQuota(db: object, workspaceId: string): Promise<number | undefined> {
  return quotas.get(db)?.(workspaceId);
}
