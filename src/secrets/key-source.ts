// Where the secrets' key comes from. WEFT_ENCRYPTION_KEY when set (required with DATABASE_URL: every
// process must hold the same key); otherwise, embedded, a key file in the data directory, generated at
// the first start with mode 0600. The file holds one base64 key per line: the first encrypts, the
// others (present only while a rotation is under way) still decrypt.
import fs from 'node:fs';
import path from 'node:path';
import { encodeKey, generateKey, KeyRing, parseKey, type EncryptionKey } from './crypto.js';

export const KEY_FILE_NAME = 'secrets.key';

export interface KeySettings {
  /** WEFT_ENCRYPTION_KEY (base64). */
  key?: string;
  /** WEFT_ENCRYPTION_KEY_PREVIOUS: keys that still decrypt rows not yet re-encrypted (base64). */
  previousKeys: readonly string[];
  databaseUrl?: string;
  dataDir: string;
}

export interface LoadedKeys {
  ring: KeyRing;
  /** `file`: the key file at `file`; `environment`: WEFT_ENCRYPTION_KEY. */
  source: 'environment' | 'file';
  file?: string;
  /** This start generated the key file. */
  generated: boolean;
}

export const MISSING_KEY_MESSAGE =
  'WEFT_ENCRYPTION_KEY is not set. With DATABASE_URL every API and worker process must hold the same key to read the workspace secrets: ' +
  'generate one with `openssl rand -base64 32`, keep it safe (without it the secrets cannot be decrypted) and set it on every process.';

export function keyFilePath(dataDir: string): string {
  return path.join(dataDir, KEY_FILE_NAME);
}

export function loadKeys(s: KeySettings): LoadedKeys {
  if (s.key) {
    const older = s.previousKeys.map((k, i) => parseKey(k, `WEFT_ENCRYPTION_KEY_PREVIOUS (key ${i + 1})`));
    return { ring: new KeyRing(parseKey(s.key, 'WEFT_ENCRYPTION_KEY'), older), source: 'environment', generated: false };
  }
  if (s.databaseUrl) throw new Error(MISSING_KEY_MESSAGE);
  const file = keyFilePath(s.dataDir);
  let generated = false;
  if (!fs.existsSync(file)) {
    fs.mkdirSync(s.dataDir, { recursive: true });
    try {
      // `wx`: two processes starting at once cannot both write a key.
      writeSynced(file, `${encodeKey(generateKey())}\n`, 'wx');
      syncDirectory(path.dirname(file));
      generated = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  const keys = readKeyFile(file);
  return { ring: new KeyRing(keys[0], keys.slice(1)), source: 'file', file, generated };
}

function readKeyFile(file: string): EncryptionKey[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean);
  if (lines.length === 0) throw new Error(`The key file ${file} is empty; restore it from your backup`);
  return lines.map((line, i) => parseKey(line, `Line ${i + 1} of ${file}`));
}

/**
 * Replaces the key file with these keys, whole or not at all (a temporary file, then a rename), on disk before
 * it returns: the secrets the database holds (synced) are encrypted under them, and a key file that came back
 * from a power cut with its old keys would leave them unreadable.
 */
export function writeKeyFile(file: string, keys: readonly EncryptionKey[]): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeSynced(tmp, keys.map((k) => `${encodeKey(k)}\n`).join(''), 'w');
  fs.renameSync(tmp, file);
  syncDirectory(path.dirname(file));
}

/** Writes a file readable by its owner only and syncs it to disk. */
function writeSynced(file: string, text: string, flag: 'w' | 'wx'): void {
  const fd = fs.openSync(file, flag, 0o600);
  try {
    fs.writeFileSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Syncs a directory, so that a file created or renamed in it stays after a power cut. */
function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
