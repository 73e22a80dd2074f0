// SQL of the secrets area. Values arrive here sealed (crypto.ts); nothing in this file sees plaintext.
import type { Queryable } from '../db/database.js';
import type { Sealed } from './crypto.js';

export interface SecretRow {
  workspace_id: string;
  name: string;
  key_id: string;
  nonce: string;
  ciphertext: string;
  created_at: Date;
  updated_at: Date;
  last_used_at: Date | null;
}

export type SecretInfo = Pick<SecretRow, 'name' | 'created_at' | 'updated_at' | 'last_used_at'>;

/** Inserts or replaces a secret; `created` tells which (xmax = 0 only on a fresh insert). */
export const countSecrets = (q: Queryable, workspaceId: string) =>
  q.query<{ n: number }>('SELECT count(*)::int AS n FROM secrets WHERE workspace_id = $1', [workspaceId]).then((r) => r[0]?.n ?? 0);

export async function upsertSecret(q: Queryable, workspaceId: string, name: string, sealed: Sealed, createdBy: string | null): Promise<{ created: boolean }> {
  const rows = await q.query<{ created: boolean }>(
    `INSERT INTO secrets (workspace_id, name, key_id, nonce, ciphertext, created_by)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (workspace_id, name) DO UPDATE
       SET key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce, ciphertext = EXCLUDED.ciphertext,
           updated_at = date_trunc('milliseconds', clock_timestamp())
     RETURNING (xmax = 0) AS created`,
    [workspaceId, name, sealed.keyId, sealed.nonce, sealed.ciphertext, createdBy],
  );
  return { created: rows[0]?.created === true };
}

export const listSecrets = (q: Queryable, workspaceId: string) =>
  q.query<SecretInfo>('SELECT name, created_at, updated_at, last_used_at FROM secrets WHERE workspace_id = $1 ORDER BY name', [workspaceId]);

export const secretNames = (q: Queryable, workspaceId: string) =>
  q.query<{ name: string }>('SELECT name FROM secrets WHERE workspace_id = $1', [workspaceId]).then((rows) => rows.map((r) => r.name));

export const findSecrets = (q: Queryable, workspaceId: string, names: readonly string[]) =>
  q.query<SecretRow>('SELECT * FROM secrets WHERE workspace_id = $1 AND name = ANY($2::text[])', [workspaceId, [...names]]);

export const deleteSecret = (q: Queryable, workspaceId: string, name: string) =>
  q.query<{ name: string }>('DELETE FROM secrets WHERE workspace_id = $1 AND name = $2 RETURNING name', [workspaceId, name]).then((r) => r.length > 0);

export const markUsed = (q: Queryable, workspaceId: string, names: readonly string[]) =>
  q.query(
    `UPDATE secrets SET last_used_at = date_trunc('milliseconds', clock_timestamp()) WHERE workspace_id = $1 AND name = ANY($2::text[])`,
    [workspaceId, [...names]],
  );

/** Every secret of every workspace, locked for a rotation. */
export const lockAllSecrets = (q: Queryable) =>
  q.query<SecretRow>('SELECT * FROM secrets ORDER BY workspace_id, name FOR UPDATE');

export const reseal = (q: Queryable, workspaceId: string, name: string, sealed: Sealed) =>
  q.query('UPDATE secrets SET key_id = $3, nonce = $4, ciphertext = $5 WHERE workspace_id = $1 AND name = $2',
    [workspaceId, name, sealed.keyId, sealed.nonce, sealed.ciphertext]);
