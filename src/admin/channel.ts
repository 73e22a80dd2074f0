// The admin channel of a running embedded server: the CLI's way in while the server holds the data
// directory. It listens on a Unix socket (never on the network) created owner-only (0600), so only the
// server's own user (and root) can connect; it serves nothing but the CLI's operations (operations.ts)
// and the backup.
//
// Protocol: HTTP/1.1 over the socket with Node's http module. `POST /v1/<operation>` with the JSON
// arguments answers 200 `{"result": ...}`, or `{"error": "..."}` with 400 (the command failed: a
// missing workspace, a refused run) or 500 (a fault). `POST /v1/backup` answers the tar archive of
// the data directory. HTTP rather than home-made line framing because the backup is a large binary
// body and HTTP already frames bodies and statuses; both ends need nothing beyond node:http.
import fs from 'node:fs';
import http from 'node:http';
import type { Services } from '../compose.js';
import type { AppContext } from '../context.js';
import { blobStream, dumpDatabase } from './backup.js';
import { CommandError, perform } from './operations.js';
import { adminSocketPath, removeServerInfo, writeServerInfo } from './server-info.js';

/** Arguments larger than this are refused: a workflow definition is capped well below it. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface AdminChannel {
  socket: string;
  /** Stops accepting, aborts operations in progress, removes the socket and server.json. */
  close(): Promise<void>;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new CommandError('Arguments too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function answer(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Listens on the admin socket and records the server in server.json. The caller holds the data
 * directory's lock, so a socket file already there was left by a process that died.
 */
export async function startAdminChannel(opts: { ctx: AppContext; services: Services; url: string }): Promise<AdminChannel> {
  const { ctx, services } = opts;
  const { dataDir } = ctx.config;
  const socket = adminSocketPath(dataDir);
  const inFlight = new Set<AbortController>();

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const name = /^\/v1\/([a-z.-]+)$/.exec(req.url ?? '')?.[1];
    if (req.method !== 'POST' || !name) return answer(res, 404, { error: 'Not an admin command' });
    const abort = new AbortController();
    inFlight.add(abort);
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('The admin client went away'));
      inFlight.delete(abort);
    });
    try {
      const body = await readBody(req);
      if (name === 'backup') {
        const tar = await dumpDatabase(ctx.db);
        res.writeHead(200, { 'content-type': 'application/x-tar', 'content-length': tar.size });
        blobStream(tar).pipe(res);
        return;
      }
      let args: unknown;
      try {
        args = body ? JSON.parse(body) : {};
      } catch {
        throw new CommandError('The arguments are not JSON');
      }
      const result = await perform(name, args, {
        services, ctx, inServer: true, signal: abort.signal,
        background: (work) => void work.catch((err: unknown) => ctx.log.error({ err, command: name }, 'admin command work failed')),
      });
      ctx.log.info({ command: name }, 'admin command');
      answer(res, 200, { result: result ?? null });
    } catch (err) {
      if (err instanceof CommandError) return answer(res, 400, { error: err.message });
      ctx.log.error({ err, command: name }, 'admin command failed');
      answer(res, 500, { error: (err as Error).message || 'admin command failed' });
    }
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      ctx.log.error({ err }, 'admin channel error');
      res.destroy();
    });
  });
  server.requestTimeout = 0; // a sync run or a backup takes as long as it takes

  try {
    if (fs.lstatSync(socket).isSocket()) fs.unlinkSync(socket);
  } catch {
    // no leftover
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Created owner-only from the start (the umask applies when the socket file is made): no moment
    // where another user could connect. The chmod below is for platforms that ignore the umask here.
    let previous: number | undefined;
    try {
      previous = process.umask(0o177);
    } catch {
      // worker threads cannot change the umask
    }
    try {
      server.listen(socket, () => {
        server.off('error', reject);
        resolve();
      });
    } finally {
      if (previous !== undefined) process.umask(previous);
    }
  });
  fs.chmodSync(socket, 0o600);
  writeServerInfo(dataDir, { pid: process.pid, url: opts.url, socket, startedAt: new Date().toISOString() });

  let closing: Promise<void> | undefined;
  return {
    socket,
    close: () => {
      closing ??= (async () => {
        removeServerInfo(dataDir);
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const abort of inFlight) abort.abort(new Error('The server is shutting down'));
        server.closeIdleConnections();
        await closed;
        fs.rmSync(socket, { force: true });
      })();
      return closing;
    },
  };
}
