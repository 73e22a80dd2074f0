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
