// Encryption of secret values at rest: AES-256-GCM with a fresh 12-byte nonce per value. The row's
// workspace and name are bound in as additional data, so a ciphertext copied onto another row (or
// another workspace) does not decrypt. Each key is known by a fingerprint stored with the row.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A 32-byte key and its fingerprint (the first 16 hex digits of its SHA-256; reveals nothing usable). */
export interface EncryptionKey {
  id: string;
  bytes: Buffer;
}

export interface Sealed {
  keyId: string;
  nonce: string;
  ciphertext: string;
}

/** Parses a base64 key of exactly 32 bytes; the message names where it came from. */
export function parseKey(base64: string, source: string): EncryptionKey {
  const text = base64.trim();
  const bytes = Buffer.from(text, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || bytes.length !== KEY_BYTES) {
    throw new Error(`${source} must be ${KEY_BYTES} random bytes in base64 (e.g. the output of: openssl rand -base64 32)`);
  }
  return keyOf(bytes);
}

export function keyOf(bytes: Buffer): EncryptionKey {
  return { id: createHash('sha256').update(bytes).digest('hex').slice(0, 16), bytes };
}

export function generateKey(): EncryptionKey {
  return keyOf(randomBytes(KEY_BYTES));
}

export const encodeKey = (key: EncryptionKey): string => key.bytes.toString('base64');

const additionalData = (workspaceId: string, name: string) => Buffer.from(`weft-secret\u0000${workspaceId}\u0000${name}`, 'utf8');

/**
 * The keys a process holds: the primary encrypts, every key decrypts the rows it encrypted. Older keys
 * stay known during a rotation, so rows not re-encrypted yet keep working.
 */
export class KeyRing {
  private readonly byId: Map<string, EncryptionKey>;

  constructor(readonly primary: EncryptionKey, older: readonly EncryptionKey[] = []) {
    this.byId = new Map([...older, primary].map((k) => [k.id, k]));
  }

  get keys(): EncryptionKey[] {
    return [...this.byId.values()];
  }

  seal(workspaceId: string, name: string, value: string): Sealed {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.primary.bytes, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData(workspaceId, name));
    const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return { keyId: this.primary.id, nonce: nonce.toString('base64'), ciphertext: body.toString('base64') };
  }

  open(workspaceId: string, name: string, sealed: Sealed): string {
    const key = this.byId.get(sealed.keyId);
    if (!key) {
      throw new Error(`Secret "${name}" was encrypted under another key (${sealed.keyId}) than this process holds; ` +
        'set WEFT_ENCRYPTION_KEY (or the key file in the data directory) to the key it was written with');
    }
    const body = Buffer.from(sealed.ciphertext, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(sealed.nonce, 'base64'), { authTagLength: TAG_BYTES });
    decipher.setAAD(additionalData(workspaceId, name));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new Error(`Secret "${name}" could not be decrypted: its stored value was altered`);
    }
  }
}
