// Workspace secrets: set, list, delete, and resolve for runs. Values are sealed before they reach the
// store and opened only for a run's block that references them (the engine's secrets port); no method
// here returns a value to a caller outside a run.
import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import type { Actor } from '../accounts/service.js';
import { recordAudit } from '../audit/audit-log.js';
import type { Database } from '../db/database.js';
import { lockWorkspace } from '../db/workspace-lock.js';
import type { SecretsPort } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { generateKey, KeyRing } from './crypto.js';
import { loadKeys, writeKeyFile, type KeySettings, type LoadedKeys } from './key-source.js';
import * as store from './store.js';

export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;
export const SECRET_NAME_RULE =
  'Secret names must match ^[A-Z][A-Z0-9_]{0,63}$ (an upper-case letter, then up to 63 upper-case letters, digits or underscores)';
export const MAX_SECRET_BYTES = 64 * 1024;
/**
 * Secrets per workspace. Without a bound a workspace could keep any number of 64 KiB values outside its storage
 * limit, and every save of a workflow reads all their names (its `{{NAME}}` references are checked against them).
 */
export const MAX_SECRETS = 1000;
/** Secrets that make a workspace's AI requests use its own provider key, by provider. */
export const PROVIDER_KEY_SECRETS = { openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY', gemini: 'GEMINI_API_KEY' } as const;
export type KeyedProvider = keyof typeof PROVIDER_KEY_SECRETS;
/** `lastUsedAt` is written at most this often per secret and process: runs do not each write a row. */
const LAST_USED_EVERY_MS = 60_000;

export interface PublicSecret {
  name: string;
  createdAt: string;
  updatedAt: string;
  lastUsedAt: string | null;
}

export interface SecretsDeps {
  db: Database;
  log: Logger;
  keys: KeySettings;
  /** How long a workspace's provider keys are reused per process (a change elsewhere bites within it). */
  providerKeyCacheMs: number;
  /** Deployed workflows of the workspace that reference a secret (the workflows service's). */
  usedBy: (workspaceId: string, name: string) => Promise<{ id: string; name: string }[]>;
}

export function checkSecretName(name: string): void {
  if (!SECRET_NAME_PATTERN.test(name)) throw new HttpError(400, SECRET_NAME_RULE);
}

export function checkSecretValue(value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) throw new HttpError(400, 'value must be a non-empty string');
  if (Buffer.byteLength(value, 'utf8') > MAX_SECRET_BYTES) {
    throw new HttpError(413, `Secret values are limited to ${MAX_SECRET_BYTES} bytes (64 KiB) of UTF-8`);
  }
}

const publicSecret = (r: store.SecretInfo): PublicSecret => ({
  name: r.name,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  lastUsedAt: r.last_used_at ? r.last_used_at.toISOString() : null,
});

export class SecretsService {
  private loaded?: LoadedKeys;
  private readonly lastMarked = new Map<string, number>();
  private readonly providerKeys = new Map<string, { keys: Partial<Record<KeyedProvider, string>>; until: number }>();

  private signing?: { keyId: string; bytes: Buffer };

  constructor(private readonly deps: SecretsDeps) {}

  /**
   * Loads the key (generating the embedded key file on a first start). Refuses, with the reason, when
   * the database is PostgreSQL and WEFT_ENCRYPTION_KEY is unset. The server calls it before listening.
   */
  keys(): LoadedKeys {
    if (!this.loaded) {
      this.loaded = loadKeys(this.deps.keys);
      if (this.loaded.source === 'file') {
        this.deps.log.warn({ keyFile: this.loaded.file, generated: this.loaded.generated },
          `Secrets are encrypted with the key in ${this.loaded.file}${this.loaded.generated ? ' (generated now)' : ''}: ` +
          'back it up together with the data directory (weft backup does not include it); without it the secrets cannot be decrypted');
      }
    }
    return this.loaded;
  }

  private get ring(): KeyRing {
    return this.keys().ring;
  }

  /**
   * A secret of the server for signing (the scoped tokens of pages), derived from the primary encryption key:
   * every process holds it, the database does not. A key rotation changes it (tokens last 30 minutes).
   */
  signingKey(): Buffer {
    const primary = this.ring.primary;
    if (this.signing?.keyId !== primary.id) {
      this.signing = { keyId: primary.id, bytes: createHmac('sha256', primary.bytes).update('weft signing key: scoped tokens').digest() };
    }
    return this.signing.bytes;
  }

  list(workspaceId: string): Promise<PublicSecret[]> {
    return store.listSecrets(this.deps.db, workspaceId).then((rows) => rows.map(publicSecret));
  }

  async names(workspaceId: string): Promise<ReadonlySet<string>> {
    return new Set(await store.secretNames(this.deps.db, workspaceId));
  }

  /** Creates or replaces a secret; the audit entry (name, who, when) commits with it. */
  async set(workspaceId: string, name: string, value: unknown, actor: Actor): Promise<{ created: boolean }> {
    checkSecretName(name);
    checkSecretValue(value);
    const sealed = this.ring.seal(workspaceId, name, value);
    this.providerKeys.delete(workspaceId);
    return this.deps.db.tx(async (q) => {
      // Before the write: a concurrent create then waits, and its count below sees this one's row.
      await lockWorkspace(q, 'secrets', workspaceId);
      const result = await store.upsertSecret(q, workspaceId, name, sealed, actor.userId ?? null);
      if (result.created && (await store.countSecrets(q, workspaceId)) > MAX_SECRETS) {
        throw new HttpError(400, `A workspace holds at most ${MAX_SECRETS} secrets: delete one before adding ${name}`);
      }
      await recordAudit(q, {
        workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type,
        action: result.created ? 'secret.created' : 'secret.replaced', resourceType: 'secret', resourceName: name,
      });
      return result;
    });
  }

  /**
   * Deletes a secret (404 when absent). Deployed workflows that reference it are allowed to lose it: they
   * are returned, and their runs fail naming the missing secret.
   */
  async delete(workspaceId: string, name: string, actor: Actor): Promise<{ usedBy: { id: string; name: string }[] }> {
    if (!SECRET_NAME_PATTERN.test(name)) throw new HttpError(404, 'Secret not found');
    const deleted = await this.deps.db.tx(async (q) => {
      const gone = await store.deleteSecret(q, workspaceId, name);
      if (gone) {
        await recordAudit(q, {
          workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type,
          action: 'secret.deleted', resourceType: 'secret', resourceName: name,
        });
      }
      return gone;
    });
    this.providerKeys.delete(workspaceId);
    if (!deleted) throw new HttpError(404, 'Secret not found');
    this.lastMarked.delete(`${workspaceId}\u0000${name}`);
    return { usedBy: await this.deps.usedBy(workspaceId, name) };
  }

  /** The values of secrets for a run of the workspace; an Error naming every missing one. */
  async resolve(workspaceId: string, names: readonly string[]): Promise<Record<string, string>> {
    const rows = await store.findSecrets(this.deps.db, workspaceId, names);
    const missing = names.filter((n) => !rows.some((r) => r.name === n));
    if (missing.length > 0) {
      throw new Error(`${missing.length === 1 ? 'Secret' : 'Secrets'} ${missing.map((n) => `{{${n}}}`).join(', ')} ` +
        `${missing.length === 1 ? 'is' : 'are'} not set in this workspace (deleted after the workflow was saved?)`);
    }
    const values: Record<string, string> = {};
    for (const r of rows) values[r.name] = this.ring.open(workspaceId, r.name, { keyId: r.key_id, nonce: r.nonce, ciphertext: r.ciphertext });
    this.markUsed(workspaceId, names);
    return values;
  }

  /**
   * The workspace's own key for an AI provider (its secret named for the provider), kept for a few
   * seconds per workspace so that the gateway's hot path does not read the table on every request.
   */
  async providerKey(workspaceId: string, provider: string): Promise<string | undefined> {
    if (!(provider in PROVIDER_KEY_SECRETS)) return undefined;
    const now = Date.now();
    let hit = this.providerKeys.get(workspaceId);
    if (!hit || hit.until <= now) {
      const names = Object.values(PROVIDER_KEY_SECRETS);
      const rows = await store.findSecrets(this.deps.db, workspaceId, names);
      const keys: Partial<Record<KeyedProvider, string>> = {};
      for (const [p, name] of Object.entries(PROVIDER_KEY_SECRETS) as [KeyedProvider, string][]) {
        const row = rows.find((r) => r.name === name);
        if (row) keys[p] = this.ring.open(workspaceId, name, { keyId: row.key_id, nonce: row.nonce, ciphertext: row.ciphertext });
      }
      if (this.providerKeys.size > 10_000) this.providerKeys.clear();
      hit = { keys, until: now + this.deps.providerKeyCacheMs };
      this.providerKeys.set(workspaceId, hit);
    }
    const key = hit.keys[provider as KeyedProvider];
    if (key !== undefined) this.markUsed(workspaceId, [PROVIDER_KEY_SECRETS[provider as KeyedProvider]]);
    return key;
  }

  /** The engine's secrets port for runs of one workspace. */
  portFor(workspaceId: string): SecretsPort {
    return { resolve: (names) => this.resolve(workspaceId, names) };
  }

  /** Writes `last_used_at` for secrets not marked by this process within the last minute, in the background. */
  private markUsed(workspaceId: string, names: readonly string[]): void {
    const now = Date.now();
    const due = names.filter((n) => (this.lastMarked.get(`${workspaceId}\u0000${n}`) ?? 0) <= now - LAST_USED_EVERY_MS);
    if (due.length === 0) return;
    if (this.lastMarked.size > 100_000) this.lastMarked.clear();
    for (const n of due) this.lastMarked.set(`${workspaceId}\u0000${n}`, now);
    store.markUsed(this.deps.db, workspaceId, due)
      .catch((err: unknown) => this.deps.log.warn({ err: { message: (err as Error).message }, workspaceId }, 'recording when secrets were last used failed'));
  }

  /**
   * Re-encrypts every secret of every workspace in one transaction. With the key file (embedded) under a
   * newly generated key: the file first holds both keys, so a crash at any point leaves every row
   * readable, and holds only the new one once the transaction committed. With WEFT_ENCRYPTION_KEY: under
   * that key, reading rows written under WEFT_ENCRYPTION_KEY_PREVIOUS.
   */
  async rotateKey(): Promise<{ rotated: number; keyId: string; source: LoadedKeys['source']; keyFile?: string }> {
    const loaded = this.keys();
    let ring = loaded.ring;
    if (loaded.source === 'file' && loaded.file) {
      const next = generateKey();
      writeKeyFile(loaded.file, [next, ...ring.keys]);
      ring = new KeyRing(next, ring.keys);
      this.loaded = { ...loaded, ring };
    }
    const active = ring;
    const rotated = await this.deps.db.tx(async (q) => {
      const rows = await store.lockAllSecrets(q);
      for (const r of rows) {
        const value = active.open(r.workspace_id, r.name, { keyId: r.key_id, nonce: r.nonce, ciphertext: r.ciphertext });
        await store.reseal(q, r.workspace_id, r.name, active.seal(r.workspace_id, r.name, value));
      }
      return rows.length;
    });
    if (loaded.source === 'file' && loaded.file) {
      writeKeyFile(loaded.file, [active.primary]);
      this.loaded = { ...loaded, ring: new KeyRing(active.primary) };
    }
    return { rotated, keyId: active.primary.id, source: loaded.source, ...(loaded.file ? { keyFile: loaded.file } : {}) };
  }
}
