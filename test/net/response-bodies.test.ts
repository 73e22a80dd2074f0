// How the guarded HTTP port reads answers (docs/architecture.md, "Where limits are enforced"): bodies in tiny
// chunks cost neither a Buffer per chunk nor unbounded event-loop work, a decoder stops as soon as its answer
// is refused, aborted or timed out, the block output cap applies to requests marked as a block's output, and
// a redirect to another origin carries none of the caller's credential headers.
import http from 'node:http';
import { tinyChunkServer } from '../support/tiny-chunks.js';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BodyBuffer, GuardedHttp } from '../../src/net/guarded-http.js';

const KIB = 1024;
const MIB = 1024 * 1024;
const CAP = 64 * KIB;
/** 16 MiB of zeros, compressed: each stands for 256 times the cap. */
const ZEROS = Buffer.alloc(16 * MIB);
const BOMBS: Record<string, Buffer> = {
  br: zlib.brotliCompressSync(ZEROS, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 } }),
  gzip: zlib.gzipSync(ZEROS, { level: 9 }),
  deflate: zlib.deflateSync(ZEROS, { level: 9 }),
};
const FACTORIES = { br: 'createBrotliDecompress', gzip: 'createGunzip', deflate: 'createInflate' } as const;
/** The start of a compressed stream, flushed so that it decodes to 600 bytes on its own. */
const STARTS: Record<string, Buffer> = {};

async function flushedStart(kind: 'br' | 'gzip'): Promise<Buffer> {
  const c = kind === 'br' ? zlib.createBrotliCompress() : zlib.createGzip();
  const parts: Buffer[] = [];
  c.on('data', (b: Buffer) => parts.push(b));
  c.write('hello '.repeat(100));
  await new Promise<void>((r) => c.flush(() => r()));
  await new Promise((r) => setImmediate(r));
  c.destroy();
  return Buffer.concat(parts);
}

let web: http.Server;
let base = '';
let port = 0;
/** Headers each path of `web` received, last request first. */
const seen = new Map<string, http.IncomingHttpHeaders>();
let raw: net.Server;
let rawBase = '';

beforeAll(async () => {
  STARTS.br = await flushedStart('br');
  STARTS.gzip = await flushedStart('gzip');
  web = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    seen.set(url.pathname, req.headers);
    const encoding = url.searchParams.get('encoding') ?? '';
    if (url.pathname === '/bomb') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': encoding });
      res.end(BOMBS[encoding]);
      return;
    }
    if (url.pathname === '/stalled') {
      // A compressed answer that starts and never ends: its decoder has input and waits for more.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': encoding });
      res.write(STARTS[encoding]);
      if (url.searchParams.get('then') === 'close') setTimeout(() => res.socket?.destroy(), 50);
      return;
    }
    if (url.pathname === '/sized') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ pad: 'x'.repeat(Number(url.searchParams.get('bytes'))) }));
      return;
    }
    if (url.pathname.startsWith('/hop')) {
      res.writeHead(307, { location: String(url.searchParams.get('to')) });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ path: url.pathname }));
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  port = (web.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;

  // Raw HTTP: a chunked answer of n one-byte chunks ("1\r\na\r\n" each), as a hostile server sends it.
  raw = tinyChunkServer();
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
  rawBase = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
});

afterAll(async () => {
  web.closeAllConnections();
  await new Promise((r) => web.close(r));
  await new Promise((r) => raw.close(r));
});

afterEach(() => {
  vi.restoreAllMocks();
});

const client = new GuardedHttp({ allowPrivateNetwork: true, maxResponseBytes: CAP, blockOutputBytes: 16 * KIB });
afterAll(() => client.close());

const get = (url: string, extra: Partial<Parameters<GuardedHttp['request']>[0]> = {}) =>
  client.request({ url, method: 'GET', headers: {}, timeoutMs: 10_000, ...extra });

/** The decoders the port creates from now on, with the bytes each has put out so far. */
function watchDecoders(kind: keyof typeof FACTORIES): { decoder: zlib.Zlib & NodeJS.ReadWriteStream & { destroyed: boolean }; out: number }[] {
  const made: { decoder: zlib.Zlib & NodeJS.ReadWriteStream & { destroyed: boolean }; out: number }[] = [];
  const name = FACTORIES[kind];
  const original = zlib[name] as () => zlib.Gunzip;
  vi.spyOn(zlib, name).mockImplementation(() => {
    const decoder = original();
    const entry = { decoder, out: 0 };
    decoder.on('data', (c: Buffer) => {
      entry.out += c.length;
    });
    made.push(entry);
    return decoder as never;
  });
  return made;
}

/** Resolves when the decoder has closed or ended, or after `boundMs` (so a decoder left running fails the test instead of hanging it). */
function settled(d: NodeJS.EventEmitter & { destroyed: boolean; closed?: boolean }, boundMs = 5000): Promise<void> {
  return new Promise((resolve) => {
    if (d.closed) return resolve();
    const timer = setTimeout(resolve, boundMs);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    d.once('close', done);
    d.once('end', done);
  });
}

describe('bodies in tiny chunks', () => {
  // The default cap (10 MiB): the pieces, not the bytes, are what is refused here.
  const roomy = new GuardedHttp({ allowPrivateNetwork: true });
  afterAll(() => roomy.close());
  const fetchRaw = (n: number) => roomy.request({ url: `${rawBase}/?n=${n}`, method: 'GET', headers: {}, timeoutMs: 30_000 });

  it('an answer in one-byte chunks arrives whole up to 65,536 pieces', async () => {
    expect((await fetchRaw(60_000)).body).toBe('a'.repeat(60_000));
  });

  it('refuses an answer that keeps arriving in pieces averaging under 64 bytes, naming the bound', async () => {
    // 200,000 one-byte chunks: far fewer bytes than the cap, but a Buffer and an event each.
    await expect(fetchRaw(200_000)).rejects.toThrow(/response body arrives in too many small pieces \(65537 pieces for 65537 bytes; past 65536 pieces they must average 64 bytes\)/);
  });

  it('keeps a body in one buffer that grows up to the cap, holding copies of the chunks', () => {
    const body = new BodyBuffer(100_000);
    const chunk = Buffer.from('ab');
    for (let i = 0; i < 40_000; i++) expect(body.append(chunk)).toBe(true);
    // The chunk is copied in: changing it afterwards changes nothing the body holds.
    chunk.write('zz');
    expect(body.size).toBe(80_000);
    expect(body.capacity).toBeLessThanOrEqual(100_000);
    expect(body.text()).toBe('ab'.repeat(40_000));
    expect(body.append(Buffer.alloc(20_001))).toBe(false);
    expect(body.append(Buffer.alloc(20_000, 'c'))).toBe(true);
    expect(body.capacity).toBe(100_000);
    expect(body.text().endsWith('c'.repeat(20_000))).toBe(true);
  });
});

describe('compressed answers', () => {
  it.each(['br', 'gzip', 'deflate'] as const)('%s: a bomb is refused at the cap and its decoder destroyed, not left inflating', async (kind) => {
    const made = watchDecoders(kind);
    await expect(get(`${base}/bomb?encoding=${kind}`)).rejects.toThrow('response body exceeds the limit of 64 KiB');
    expect(made).toHaveLength(1);
    const { decoder } = made[0];
    await settled(decoder);
    expect(decoder.destroyed).toBe(true);
    // Without the destroy, the decoder went on through all 16 MiB its input stands for.
    expect(made[0].out).toBeLessThan(MIB);
  });

  it.each(['br', 'gzip'] as const)('%s: an abort and a timeout destroy the decoder of an answer in progress', async (kind) => {
    const made = watchDecoders(kind);
    const ac = new AbortController();
    const aborted = get(`${base}/stalled?encoding=${kind}`, { signal: ac.signal });
    const outcome = aborted.then(() => null, (err: Error) => err.message);
    // The decoder has had the start of the answer and waits for the rest.
    await vi.waitFor(() => expect(made[0]?.out).toBeGreaterThan(0));
    ac.abort(new Error('run cancelled'));
    expect(await outcome).toBe('request aborted: run cancelled');
    await settled(made[0].decoder);
    expect(made[0].decoder.destroyed).toBe(true);

    await expect(get(`${base}/stalled?encoding=${kind}`, { timeoutMs: 300 })).rejects.toThrow('request timed out after 300 ms');
    await settled(made[1].decoder);
    expect(made[1].decoder.destroyed).toBe(true);
  });

  it('a compressed answer whose connection closes early fails at once, naming it, not at the timeout', async () => {
    const made = watchDecoders('gzip');
    await expect(get(`${base}/stalled?encoding=gzip&then=close`, { timeoutMs: 30_000 })).rejects.toThrow(/could not read the response/);
    await settled(made[0].decoder);
    expect(made[0].decoder.destroyed).toBe(true);
  });
});

describe('the block output cap', () => {
  it('refuses an answer over it when the request is a block output, naming the limit; others keep the port cap', async () => {
    await expect(get(`${base}/sized?bytes=20000`, { blockOutput: true })).rejects.toThrow(
      "response body exceeds the limit of 16 KiB for a block's output (maxBlockOutputBytes, WEFT_MAX_BLOCK_OUTPUT_BYTES)",
    );
    expect(JSON.parse((await get(`${base}/sized?bytes=20000`)).body).pad).toHaveLength(20_000);
    expect(JSON.parse((await get(`${base}/sized?bytes=1000`, { blockOutput: true })).body).pad).toHaveLength(1000);
  });

  it('is the port cap when that is lower', async () => {
    const roomy = new GuardedHttp({ allowPrivateNetwork: true, maxResponseBytes: CAP, blockOutputBytes: MIB });
    await expect(roomy.request({ url: `${base}/sized?bytes=70000`, method: 'GET', headers: {}, timeoutMs: 5000, blockOutput: true }))
      .rejects.toThrow(/^response body exceeds the limit of 64 KiB$/);
    roomy.close();
  });
});

describe('redirects', () => {
  const headers = { 'X-Api-Key': 'k-secret', Authorization: 'Bearer t', Cookie: 'a=1', 'X-Custom': 'v', Accept: 'application/json' };

  it('to another origin, only headers that carry no credential go along', async () => {
    // 127.0.0.1 and localhost are two origins.
    const r = await get(`${base}/hop?to=${encodeURIComponent(`http://localhost:${port}/other`)}`, { headers });
    expect(JSON.parse(r.body)).toEqual({ path: '/other' });
    const got = seen.get('/other')!;
    expect(got['x-api-key']).toBeUndefined();
    expect(got.authorization).toBeUndefined();
    expect(got.cookie).toBeUndefined();
    expect(got['x-custom']).toBeUndefined();
    expect(got.accept).toBe('application/json');
    expect(got['user-agent']).toBe('weft-workflow/0.1');
  });

  it('within the origin, every header goes along', async () => {
    await get(`${base}/hop?to=/same`, { headers });
    const got = seen.get('/same')!;
    expect(got).toMatchObject({ 'x-api-key': 'k-secret', authorization: 'Bearer t', cookie: 'a=1', 'x-custom': 'v' });
  });
});
