// The two small servers `bench/compare.ts` runs beside Weft, each in a process of its own so that
// neither shares an event loop with the load generator or with the server under test:
//
//   node --import tsx bench/compare-servers.ts hello      a bare Fastify GET / -> {"hello":"world"}
//   node --import tsx bench/compare-servers.ts upstream   an OpenAI-wire chat-completions server that answers at once
//   node --import tsx bench/compare-servers.ts proxy URL  a bare pass-through proxy to URL (an upstream's /v1)
//   node --import tsx bench/compare-servers.ts node-proxy URL  the same on Node's own http server and client
//   node --import tsx bench/compare-servers.ts commit     POST /run -> one row committed on the embedded database, then the answer
//
// The proxy is the floor of any gateway written like Weft's (Fastify, undici): it parses the JSON body,
// forwards it with undici's `request` over a kept-alive pool, parses the answer and sends it back, and does
// nothing else (no key, no validation, no deposit, no record). The gateway's figures are read against it.
// The node-proxy does the same with no library at all (node:http both ways, a kept-alive agent): the floor of
// any Node pass-through that reads what it forwards, as a gateway that bills by model and usage must.
//
// The commit floor is the least a run can cost on the embedded database: it parses the JSON body, writes one
// row with it into a table with only a primary key, group-committed (several requests per statement,
// as Weft writes its runs), and answers once the row is committed. No key, no
// workflow, no sandbox, no limits. Sync execute's figures are read against it: nothing that records each run
// before answering (nothing a client was told succeeded may be lost) can be faster on this database.
//
// Each listens on a free loopback port, prints {"port":N} on stdout once it listens, and exits when its
// stdin closes (so it never outlives the bench process, even one killed with SIGKILL) or on SIGTERM/SIGINT.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { Agent, request } from 'undici';
import { connectDatabase } from '../src/db/connect.js';
import { GroupCommit } from '../src/db/group-commit.js';

// A fixed small completion with usage, the shape OpenAI answers a non-streaming request with.
const completion = JSON.stringify({
  id: 'chatcmpl-compare', object: 'chat.completion', created: 1700000000, model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello! How can I help you today?', refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
});
const models = JSON.stringify({ object: 'list', data: [{ id: 'gpt-4o-mini', object: 'model', created: 1700000000, owned_by: 'openai' }] });

async function hello(): Promise<number> {
  const app = Fastify({ logger: false });
  app.get('/', async () => ({ hello: 'world' }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

async function upstream(): Promise<number> {
  const server = http.createServer((req, res) => {
    // The body is read to its end (a real server would parse it) but not looked at: every POST is a chat completion.
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET' && req.url?.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(models) }).end(models);
      } else if (req.method === 'POST') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) }).end(completion);
      } else {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      }
    });
  });
  // Clients keep their sockets for the whole run.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function proxy(base: string): Promise<number> {
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256 });
  const app = Fastify({ logger: false });
  app.post('/v1/chat/completions', async (req, reply) => {
    const res = await request(`${base}/chat/completions`, {
      method: 'POST', dispatcher: agent, body: JSON.stringify(req.body),
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    });
    const answer: unknown = await res.body.json();
    return reply.code(res.statusCode).send(answer);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

async function nodeProxy(base: string): Promise<number> {
  const upstreamUrl = new URL(`${base}/chat/completions`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const readAll = (stream: http.IncomingMessage, done: (text: string) => void) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c)).on('end', () => done(Buffer.concat(chunks).toString()));
  };
  const server = http.createServer((req, res) => {
    const fail = () => { if (!res.headersSent) res.writeHead(502).end(); };
    readAll(req, (text) => {
      let body: string;
      try {
        body = JSON.stringify(JSON.parse(text));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const out = http.request(upstreamUrl, {
        method: 'POST', agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: 'Bearer sk-bench' },
      }, (answer) => readAll(answer, (received) => {
        let sent: string;
        try {
          sent = JSON.stringify(JSON.parse(received));
        } catch {
          fail();
          return;
        }
        res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(sent) }).end(sent);
      }));
      out.on('error', fail);
      out.end(body);
    });
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

const INSERT_RUNS = `INSERT INTO floor_runs (id, input, output) SELECT r.id, r.input, r.output
  FROM jsonb_to_recordset($1::jsonb) AS r(id text, input jsonb, output jsonb) RETURNING floor_runs.id`;

async function commitFloor(): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-commit-floor-'));
  const db = await connectDatabase({ dataDir: dir });
  for (const s of ['SIGTERM', 'SIGINT', 'exit'] as const) process.on(s, () => fs.rmSync(dir, { recursive: true, force: true }));
  await db.exec('CREATE TABLE floor_runs (id text PRIMARY KEY, input jsonb, output jsonb, created_at timestamptz NOT NULL DEFAULT now())');
  type Row = { id: string; input: unknown; output: unknown };
  const writes = new GroupCommit<Row, void>({
    writeBatch: async (rows) => {
      await db.query(INSERT_RUNS, [JSON.stringify(rows)]);
      return rows.map(() => undefined);
    },
    writeOne: async (row) => {
      await db.query(INSERT_RUNS, [JSON.stringify([row])]);
    },
  });
  const app = Fastify({ logger: false });
  app.post('/run', async (req) => {
    const id = randomUUID();
    const input = (req.body as { inputs?: unknown } | null)?.inputs ?? {};
    await writes.submit({ id, input, output: 42 });
    return { success: true, executionId: id, output: { value: 42 } };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

const kind = process.argv[2];
const proxyTo = process.argv[3];
if (kind !== 'hello' && kind !== 'upstream' && kind !== 'commit' && !((kind === 'proxy' || kind === 'node-proxy') && proxyTo)) {
  process.stderr.write('usage: compare-servers.ts hello|upstream|commit|proxy <upstream base URL>|node-proxy <upstream base URL>\n');
  process.exit(2);
}
const port = kind === 'hello' ? await hello() : kind === 'upstream' ? await upstream() : kind === 'commit' ? await commitFloor()
  : kind === 'node-proxy' ? await nodeProxy(proxyTo!) : await proxy(proxyTo!);
process.stdout.write(JSON.stringify({ port }) + '\n');
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
for (const s of ['SIGTERM', 'SIGINT'] as const) process.on(s, () => process.exit(0));
