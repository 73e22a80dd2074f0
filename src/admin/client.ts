// The CLI's end of the admin channel (channel.ts describes the protocol): one HTTP request per call over
// the server's Unix socket.
import http from 'node:http';
import type { Readable } from 'node:stream';
import { CommandError } from './operations.js';
import type { ServerInfo } from './server-info.js';

function post(server: ServerInfo, path: string, body: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath: server.socket, path, method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, resolve);
    req.on('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'ECONNREFUSED' || err.code === 'ENOENT' || err.code === 'EACCES'
        ? new CommandError(`The Weft server (process ${server.pid}, ${server.url}) does not answer on its admin socket ${server.socket}: ${err.code}`)
        : err);
    });
    req.end(body);
  });
}

async function text(res: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function failure(res: http.IncomingMessage): Promise<never> {
  const body = await text(res);
  let message: string;
  try {
    message = String((JSON.parse(body) as { error?: unknown }).error ?? body);
  } catch {
    message = body || `admin channel answered ${res.statusCode}`;
  }
  throw new CommandError(message);
}

/** Runs an operation inside the server; resolves with its result, rejects with a CommandError. */
export async function callAdmin(server: ServerInfo, name: string, args: unknown): Promise<unknown> {
  const res = await post(server, `/v1/${name}`, JSON.stringify(args ?? {}));
  if (res.statusCode !== 200) return failure(res);
  return (JSON.parse(await text(res)) as { result: unknown }).result;
}

/** The server's dump of its data directory, as a stream of the tar archive. */
export async function fetchBackup(server: ServerInfo): Promise<Readable> {
  const res = await post(server, '/v1/backup', '{}');
  if (res.statusCode !== 200) return failure(res);
  return res;
}
