// Where a running embedded server can be found: `<dataDir>/server.json` names its pid, its URL and its
// admin socket. The file is written once the server listens and removed when it stops; a file left by a
// killed server is recognised as stale because its pid no longer holds the data directory's lock.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface ServerInfo {
  pid: number;
  /** The HTTP address it listens on. */
  url: string;
  /** The admin channel's Unix socket. */
  socket: string;
  startedAt: string;
}

export const serverInfoPath = (dataDir: string): string => path.join(dataDir, 'server.json');

/**
 * `<dataDir>/admin.sock`, unless that path is too long for a Unix socket address (108 bytes on Linux,
 * 104 on macOS): then a name derived from the data directory in the temporary directory. Either way
 * server.json records the path the client must use.
 */
export function adminSocketPath(dataDir: string): string {
  const inside = path.join(dataDir, 'admin.sock');
  if (Buffer.byteLength(inside) < 100) return inside;
  const tag = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16);
  return path.join(os.tmpdir(), `weft-admin-${tag}.sock`);
}

export function readServerInfo(dataDir: string): ServerInfo | undefined {
  try {
    const value = JSON.parse(fs.readFileSync(serverInfoPath(dataDir), 'utf8')) as Partial<ServerInfo>;
    if (typeof value.pid !== 'number' || typeof value.socket !== 'string' || typeof value.url !== 'string') return undefined;
    return { pid: value.pid, url: value.url, socket: value.socket, startedAt: String(value.startedAt ?? '') };
  } catch {
    return undefined; // absent, or half written
  }
}

/** Written whole under a temporary name and renamed, so a reader never sees half a file. */
export function writeServerInfo(dataDir: string, info: ServerInfo): void {
  const file = serverInfoPath(dataDir);
  fs.writeFileSync(`${file}.${process.pid}.tmp`, JSON.stringify(info) + '\n', { mode: 0o600 });
  fs.renameSync(`${file}.${process.pid}.tmp`, file);
}

/** Removes server.json if it is still this process's. */
export function removeServerInfo(dataDir: string, pid = process.pid): void {
  if (readServerInfo(dataDir)?.pid !== pid) return;
  try {
    fs.unlinkSync(serverInfoPath(dataDir));
  } catch {
    // already gone
  }
}
