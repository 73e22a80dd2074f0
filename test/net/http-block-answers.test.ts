// Outbound answers through the public API (docs/architecture.md, "Where limits are enforced", "Connectors"):
// an http block's answer in one-byte chunks, a compressed bomb, an answer over the block output cap (refused
// before it is parsed), a cancelled run's decoder, and a connector's header credential on a redirect to
// another origin. The upstreams listen on loopback: outbound private addresses are allowed for this server.
import http from 'node:http';
import { tinyChunkServer } from '../support/tiny-chunks.js';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

const KIB = 1024;
const BLOCK_CAP = 256 * KIB;
const BOMB = zlib.brotliCompressSync(Buffer.alloc(16 * 1024 * 1024), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 } });
const API_KEY = `key-${Date.now()}-secret`;

let t: TestServer;
let up: http.Server;
let upUrl = '';
let upPort = 0;
/** Requests the upstream received: path and headers. */
const received: { path: string; headers: http.IncomingHttpHeaders }[] = [];
let tiny: net.Server;
let tinyUrl = '';
let gzipStart: Buffer;

function document(baseUrl: string) {
  return {
    openapi: '3.1.0',
    info: { title: 'Hops', version: '1.0.0' },
    servers: [{ url: baseUrl }],
    paths: {
      '/hop': { get: { operationId: 'hop', parameters: [{ name: 'to', in: 'query', required: true, schema: { type: 'string' } }], responses: { 200: { description: 'ok' } } } },
      '/big': { get: { operationId: 'big', responses: { 200: { description: 'ok' } } } },
    },
  };
}

beforeAll(async () => {
  const gz = zlib.createGzip();
  const parts: Buffer[] = [];
  gz.on('data', (b: Buffer) => parts.push(b));
  gz.write('hello '.repeat(100));
  await new Promise<void>((r) => gz.flush(() => r()));
  await new Promise((r) => setImmediate(r));
  gz.destroy();
  gzipStart = Buffer.concat(parts);

  up = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    received.push({ path: url.pathname, headers: req.headers });
    if (url.pathname === '/bomb') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'br' });
      res.end(BOMB);
    } else if (url.pathname === '/stalled') {
      // A gzip answer that starts and never ends.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
      res.write(gzipStart);
    } else if (url.pathname === '/big') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ items: Array.from({ length: 30_000 }, (_, i) => ({ i, name: `item ${i}` })) }));
    } else if (url.pathname === '/hop') {
      res.writeHead(302, { location: String(url.searchParams.get('to')) });
      res.end();
    } else if (url.pathname === '/openapi.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(document(upUrl)));
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: url.pathname }));
    }
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  upPort = (up.address() as AddressInfo).port;
  upUrl = `http://127.0.0.1:${upPort}`;

  // Raw HTTP: a chunked answer of n one-byte chunks ("1\r\na\r\n" each).
  tiny = tinyChunkServer();
  await new Promise<void>((r) => tiny.listen(0, '127.0.0.1', r));
  tinyUrl = `http://127.0.0.1:${(tiny.address() as AddressInfo).port}`;

  t = await startTestServer({ env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_DEFAULT_PLAN: 'enterprise', WEFT_MAX_BLOCK_OUTPUT_BYTES: String(BLOCK_CAP) } });
});

afterAll(async () => {
  await t?.close();
  up?.closeAllConnections();
  await new Promise((r) => up?.close(r));
  await new Promise((r) => tiny?.close(r));
});

afterEach(() => {
  vi.restoreAllMocks();
});

const httpBlock = (url: string, extra: Record<string, unknown> = {}) => ({ id: 'get', type: 'http', name: 'Get', config: { url, timeoutMs: 30_000, ...extra } });
const single = (block: Record<string, unknown>) => ({ blocks: [start(), block], edges: [{ from: 'start', to: block.id }] });
const execute = (id: string) => t.call('POST', `/api/workflows/${id}/execute`, {});

/** The gunzip / brotli decoders the server creates from now on (it runs in this process). */
function watchDecoders(name: 'createGunzip' | 'createBrotliDecompress'): (zlib.Gunzip & { closed?: boolean })[] {
  const made: zlib.Gunzip[] = [];
  const original = zlib[name] as () => zlib.Gunzip;
  vi.spyOn(zlib, name).mockImplementation(() => {
    const d = original();
    made.push(d);
    return d as never;
  });
  return made;
}

describe('the http block reading answers', () => {
  it('fails a block whose answer comes in one-byte chunks, naming the bound, and the server keeps answering', async () => {
    // Two branches of 200,000 one-byte chunks each: well under the 10 MiB cap in bytes.
    const id = await deploy(t, 'tiny-chunks', {
      blocks: [start(), { id: 'fan', type: 'parallel', name: 'Fan', config: { kind: 'count', count: 2 }, blocks: [httpBlock(`${tinyUrl}/?n=200000`)] }],
      edges: [{ from: 'start', to: 'fan' }],
    });
    const r = await execute(id);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toContain('response body arrives in too many small pieces');
    expect((await t.call('GET', '/healthz')).status).toBe(200);
  });

  it('stops decompressing a bomb once the answer is refused', async () => {
    const made = watchDecoders('createBrotliDecompress');
    const id = await deploy(t, 'brotli-bomb', single(httpBlock(`${upUrl}/bomb`)));
    const r = await execute(id);
    expect(made).toHaveLength(1);
    await vi.waitFor(() => expect(made[0].destroyed).toBe(true));
    expect(r.body.success).toBe(false);
    expect(r.body.error).toContain('response body exceeds the limit of 256 KiB');
  });

  it('stops the decoder of an answer in progress when the run is cancelled or its block times out', async () => {
    const made = watchDecoders('createGunzip');
    const id = await deploy(t, 'stalled-gzip', single(httpBlock(`${upUrl}/stalled`)));
    // A sync run is cancelled when its caller goes away.
    const ac = new AbortController();
    const call = fetch(`${t.url}/api/workflows/${id}/execute`, {
      method: 'POST', headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' }, body: '{}', signal: ac.signal,
    }).catch(() => null);
    await vi.waitFor(() => expect(made).toHaveLength(1));
    ac.abort();
    await call;
    await vi.waitFor(() => expect(made[0].destroyed).toBe(true));

    const timed = await deploy(t, 'stalled-gzip-timeout', single(httpBlock(`${upUrl}/stalled`, { timeoutMs: 300 })));
    const r = await execute(timed);
    expect(r.body.error).toContain('request timed out after 300 ms');
    expect(made).toHaveLength(2);
    await vi.waitFor(() => expect(made[1].destroyed).toBe(true));
  });

  it('refuses an answer over the block output cap before parsing it, naming the limit; an error edge handles it', async () => {
    const parse = vi.spyOn(JSON, 'parse');
    const id = await deploy(t, 'big-json', {
      blocks: [start(), httpBlock(`${upUrl}/big`), fn('handler', 'return { handled: <get.error> }', 'Handler')],
      edges: [{ from: 'start', to: 'get' }, { from: 'get', to: 'handler', on: 'error' }],
    });
    const r = await execute(id);
    expect(r.body.success, r.text).toBe(true);
    expect(r.body.output.handled).toBe("response body exceeds the limit of 256 KiB for a block's output (maxBlockOutputBytes, WEFT_MAX_BLOCK_OUTPUT_BYTES)");
    // The 900 KB answer was never parsed on the server's event loop.
    const longest = Math.max(0, ...parse.mock.calls.map(([text]) => (typeof text === 'string' ? text.length : 0)));
    expect(longest).toBeLessThan(BLOCK_CAP);
  });
});

describe('connector answers and redirects', () => {
  let connectorId = '';

  beforeAll(async () => {
    expect((await t.call('PUT', '/api/v1/secrets/HOPS_KEY', { workspaceId: t.workspaceId, value: API_KEY })).status).toBe(201);
    const c = await t.call('POST', '/api/v1/connectors', {
      workspaceId: t.workspaceId, name: 'Hops', spec: document(upUrl), auth: { type: 'header', secret: 'HOPS_KEY', name: 'X-Api-Key' },
    });
    expect(c.status, c.text).toBe(201);
    connectorId = c.body.data.connector.id;
  });

  const connector = (operationId: string, parameters: Record<string, unknown> = {}) => single({ id: 'call', type: 'connector', name: 'Call', config: { connectorId, operationId, parameters } });

  it("does not send the connector's header credential to another origin on a redirect; the same origin still gets it", async () => {
    // 127.0.0.1 and localhost are two origins of the same upstream.
    const away = await deploy(t, 'hop-away', connector('hop', { to: `http://localhost:${upPort}/landing-away` }));
    const r = await execute(away);
    expect(r.body.success, r.text).toBe(true);
    expect(r.body.output.data).toEqual({ path: '/landing-away' });
    const hop = received.findLast((x) => x.path === '/hop')!;
    expect(hop.headers['x-api-key']).toBe(API_KEY);
    const landed = received.findLast((x) => x.path === '/landing-away')!;
    expect(landed.headers.host).toBe(`localhost:${upPort}`);
    expect(landed.headers['x-api-key']).toBeUndefined();

    const same = await deploy(t, 'hop-same', connector('hop', { to: '/landing-same' }));
    expect((await execute(same)).body.output.data).toEqual({ path: '/landing-same' });
    expect(received.findLast((x) => x.path === '/landing-same')!.headers['x-api-key']).toBe(API_KEY);
  });

  it('refuses an operation answer over the block output cap, naming the limit', async () => {
    const id = await deploy(t, 'connector-big', connector('big'));
    const r = await execute(id);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toContain("response body exceeds the limit of 256 KiB for a block's output (maxBlockOutputBytes, WEFT_MAX_BLOCK_OUTPUT_BYTES)");
  });
});
