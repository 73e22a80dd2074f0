// Over 450 lines: every bound an outbound answer needs (address guard, redirects, body buffer, decoders, caps)
// lives in this one port on purpose, so no caller can read a body around them.
// HttpPort adapter with SSRF protection. Only http(s) URLs; literal IPs are checked before
// connecting and host names are resolved by our own lookup hook, which checks every resolved
// address and is the lookup the socket actually connects with (no DNS-rebinding window).
// Refused unless allowPrivateNetwork: private, loopback, link-local, CGNAT, multicast,
// unspecified, reserved/documentation ranges, IPv6 ULA/link-local/loopback, and IPv6 forms that
// embed a refused IPv4 address. Redirects are followed (each hop checked; a hop to another origin
// keeps only headers that carry no credential), responses are capped (10 MiB by default, after
// decompression; the block output cap for a block's answer) and read into one buffer, a body must not
// trickle in tiny pieces, and a decoder stops with its answer; timeouts and AbortSignals are honoured
// (docs/architecture.md, "Where limits are enforced").
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import zlib from 'node:zlib';
import type { HttpPort, HttpRequest, HttpResponse } from '../engine/types.js';

export interface GuardedHttpOptions {
  /** Allow private, loopback and other internal addresses (tests, trusted self-hosting). */
  allowPrivateNetwork?: boolean;
  /** Response size cap in bytes (default 10 MiB). */
  maxResponseBytes?: number;
  /**
   * The block output cap (maxBlockOutputBytes): a request marked `blockOutput` is refused past it when it is
   * the lower cap, before its body is ever parsed (docs/architecture.md, "Where limits are enforced").
   */
  blockOutputBytes?: number;
  /** Redirects followed (default 5). */
  maxRedirects?: number;
  userAgent?: string;
}

const MIB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------------------------

function parseIPv4(s: string): number | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const v = Number(p);
    if (v > 255) return null;
    n = n * 256 + v;
  }
  return n;
}

const V4_BLOCKS: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const V4_PARSED = V4_BLOCKS.map(([base, bits, why]) => ({ base: parseIPv4(base) as number, bits, why }));

function v4Reason(n: number): string | null {
  for (const { base, bits, why } of V4_PARSED) {
    const size = 2 ** (32 - bits);
    if (n >= base && n < base + size) return why;
  }
  return null;
}

/** 8 hextets, or null when not an IPv6 address. */
function parseIPv6(input: string): number[] | null {
  let s = input;
  const zone = s.indexOf('%');
  if (zone !== -1) s = s.slice(0, zone);
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.', lastColon)) {
    // Embedded dotted IPv4 (e.g. ::ffff:127.0.0.1): rewrite it as two hextets.
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (v4 === null) return null;
    s = `${s.slice(0, lastColon + 1)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string): number[] | null => {
    if (part === '') return [];
    const out: number[] = [];
    for (const h of part.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(h)) return null;
      out.push(parseInt(h, 16));
    }
    return out;
  };
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  if (head === null || rest === null) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const fill = 8 - head.length - rest.length;
  if (fill < 1) return null;
  return [...head, ...new Array<number>(fill).fill(0), ...rest];
}

function v6Reason(h: number[]): string | null {
  const v4At = (hi: number, lo: number) => v4Reason(hi * 65536 + lo);
  const zeroUntil = (k: number) => h.slice(0, k).every((x) => x === 0);
  if (h.every((x) => x === 0)) return 'unspecified';
  if (zeroUntil(7) && h[7] === 1) return 'loopback';
  if (zeroUntil(5) && h[5] === 0xffff) return v4At(h[6], h[7]) ?? null; // IPv4-mapped
  if (zeroUntil(6)) return v4At(h[6], h[7]) ?? 'reserved'; // IPv4-compatible (deprecated)
  if (h[0] === 0x64 && h[1] === 0xff9b && h.slice(2, 6).every((x) => x === 0)) return v4At(h[6], h[7]); // NAT64
  if (h[0] === 0x2002) return v4At(h[1], h[2]); // 6to4
  if (h[0] === 0x2001 && h[1] === 0) return 'Teredo';
  if (h[0] === 0x2001 && h[1] === 0xdb8) return 'documentation';
  if (h[0] === 0x100 && h[1] === 0 && h[2] === 0 && h[3] === 0) return 'discard';
  if ((h[0] & 0xfe00) === 0xfc00) return 'unique local (ULA)';
  if ((h[0] & 0xffc0) === 0xfe80) return 'link-local';
  if ((h[0] & 0xffc0) === 0xfec0) return 'site-local';
  if ((h[0] & 0xff00) === 0xff00) return 'multicast';
  return null;
}

/** Why an address is refused, or null when it is a public address. */
export function refusedAddressReason(address: string): string | null {
  const kind = isIP(address.split('%')[0]);
  if (kind === 4) {
    const n = parseIPv4(address);
    return n === null ? 'invalid' : v4Reason(n);
  }
  if (kind === 6) {
    const h = parseIPv6(address);
    return h === null ? 'invalid' : v6Reason(h);
  }
  return 'not an IP address';
}

// ---------------------------------------------------------------------------------------------
// Adapter
// ---------------------------------------------------------------------------------------------

function flattenHeaders(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function formatBytes(n: number): string {
  if (n >= MIB && n % MIB === 0) return `${n / MIB} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

function abortMessage(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error ? `request aborted: ${r.message}` : 'request aborted';
}

/**
 * Headers a request keeps when a redirect leads to another origin: none of them carries a credential. Every
 * other header the caller set (Authorization, Cookie, an API key under any name, MCP session headers) stays
 * with the origin it was meant for, whatever the caller called it.
 */
const CROSS_ORIGIN_SAFE_HEADERS = new Set([
  'accept', 'accept-encoding', 'accept-language', 'cache-control', 'content-language', 'content-length', 'content-type', 'user-agent',
]);

/**
 * Pieces a body may arrive in (one 'data' event each: a socket read, or each chunk of a chunked answer) before
 * they must average MIN_PIECE_BYTES. A piece costs about a microsecond of the event loop's CPU however small
 * it is: 10 MiB in one-byte chunks took 9 s, in 64 KiB reads a few milliseconds. Real answers come in reads
 * of kilobytes, or in events or lines of tens of bytes at the least.
 */
const FREE_PIECES = 65_536;
const MIN_PIECE_BYTES = 64;
/** Bytes of a compressed body handed to its decoder at once (the wire may bring them one byte a chunk). */
const DECODER_INPUT_BYTES = 16 * 1024;
/** First room of a body; it doubles as the body grows, up to its cap. */
const BODY_FIRST_BYTES = 16 * 1024;

/**
 * A response body in one buffer that grows as bytes arrive, up to a cap. Each chunk is copied in, so none is
 * kept: the HTTP parser hands out one small Buffer (a view that also pins the socket's read buffer) per chunk
 * of a chunked answer, and keeping those cost about 200 bytes of heap per body byte for one-byte chunks.
 */
export class BodyBuffer {
  private buf = Buffer.alloc(0);
  private used = 0;

  constructor(private readonly max: number) {}

  get size(): number {
    return this.used;
  }

  /** Bytes held (the body and its spare room): never more than the cap. */
  get capacity(): number {
    return this.buf.length;
  }

  /** Appends a copy of `chunk`; false (nothing appended) when the body would pass the cap. */
  append(chunk: Buffer): boolean {
    const need = this.used + chunk.length;
    if (need > this.max) return false;
    if (need > this.buf.length) {
      // Only bytes below `used` are ever read, so the new room need not be zeroed.
      const next = Buffer.allocUnsafe(Math.min(this.max, Math.max(need, BODY_FIRST_BYTES, this.buf.length * 2)));
      this.buf.copy(next, 0, 0, this.used);
      this.buf = next;
    }
    chunk.copy(this.buf, this.used);
    this.used = need;
    return true;
  }

  text(): string {
    return this.buf.toString('utf8', 0, this.used);
  }
}

type Decoder = zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress;

/**
 * Feeds a compressed body to its decoder in blocks: a zlib call per one-byte chunk would cost a thread-pool
 * round trip for each byte. A block goes when it is full or once the chunks of one socket read have all
 * arrived (they come in the same turn of the event loop). The socket waits while the decoder is behind.
 */
class DecoderInput {
  private block = Buffer.allocUnsafe(DECODER_INPUT_BYTES);
  private used = 0;
  private scheduled = false;

  constructor(private readonly decoder: Decoder, private readonly source: http.IncomingMessage) {}

  write(chunk: Buffer): void {
    let from = 0;
    while (from < chunk.length) {
      const n = Math.min(chunk.length - from, DECODER_INPUT_BYTES - this.used);
      chunk.copy(this.block, this.used, from, from + n);
      this.used += n;
      from += n;
      if (this.used === DECODER_INPUT_BYTES) this.flush();
    }
    if (this.used > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
  }

  end(): void {
    this.flush();
    this.decoder.end();
  }

  private flush(): void {
    if (this.used === 0 || this.decoder.destroyed) return;
    const full = this.block.subarray(0, this.used);
    this.block = Buffer.allocUnsafe(DECODER_INPUT_BYTES);
    this.used = 0;
    if (!this.decoder.write(full)) {
      this.source.pause();
      this.decoder.once('drain', () => this.source.resume());
    }
  }
}

function decoderFor(encoding: string): Decoder | null {
  if (encoding === 'gzip' || encoding === 'x-gzip') return zlib.createGunzip();
  if (encoding === 'deflate') return zlib.createInflate();
  if (encoding === 'br') return zlib.createBrotliDecompress();
  return null;
}

export class GuardedHttp implements HttpPort {
  private readonly allowPrivate: boolean;
  private readonly maxBytes: number;
  private readonly blockOutputBytes: number | null;
  private readonly maxRedirects: number;
  private readonly userAgent: string;
  // Own agents: pooled sockets are never shared with a differently configured instance.
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 256 });

  constructor(opts: GuardedHttpOptions = {}) {
    this.allowPrivate = opts.allowPrivateNetwork === true;
    this.maxBytes = opts.maxResponseBytes ?? 10 * MIB;
    this.blockOutputBytes = opts.blockOutputBytes ?? null;
    this.maxRedirects = opts.maxRedirects ?? 5;
    this.userAgent = opts.userAgent ?? 'weft-workflow/0.1';
  }

  private readonly lookup: LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { all: true, family: options.family, hints: options.hints }, (err, addresses) => {
      if (err) {
        callback(err, '', 0);
        return;
      }
      if (addresses.length === 0) {
        callback(new Error(`could not resolve ${hostname}`), '', 0);
        return;
      }
      if (!this.allowPrivate) {
        for (const a of addresses) {
          const why = refusedAddressReason(a.address);
          if (why !== null) {
            callback(new Error(`refused to connect to ${hostname}: it resolves to ${a.address}, a ${why} address`), '', 0);
            return;
          }
        }
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0].address, addresses[0].family);
    });
  };

  private check(url: URL): void {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`refused: only http and https URLs are allowed (got ${url.protocol.replace(/:$/, '')})`);
    }
    if (this.allowPrivate) return;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host.split('%')[0]) !== 0) {
      const why = refusedAddressReason(host);
      if (why !== null) throw new Error(`refused to connect to ${host}: a ${why} address`);
    }
    // Host names are checked after resolution, in the lookup hook the socket connects with.
  }

  /** The body cap of one request and the words of its refusal. */
  private capFor(req: HttpRequest): { bytes: number; message: string } {
    if (req.blockOutput === true && this.blockOutputBytes !== null && this.blockOutputBytes < this.maxBytes) {
      return {
        bytes: this.blockOutputBytes,
        message: `response body exceeds the limit of ${formatBytes(this.blockOutputBytes)} for a block's output (maxBlockOutputBytes, WEFT_MAX_BLOCK_OUTPUT_BYTES)`,
      };
    }
    return { bytes: this.maxBytes, message: `response body exceeds the limit of ${formatBytes(this.maxBytes)}` };
  }

  async request(req: HttpRequest): Promise<HttpResponse> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      throw new Error(`invalid URL: ${req.url}`);
    }
    if (!/^[A-Za-z]+$/.test(req.method)) throw new Error(`invalid HTTP method: ${req.method}`);
    const deadline = Date.now() + Math.max(1, req.timeoutMs);
    const cap = this.capFor(req);
    let method = req.method.toUpperCase();
    let body = req.body;
    let headers = { ...req.headers };
    for (let hop = 0; ; hop++) {
      this.check(url);
      if (req.signal?.aborted) throw new Error(abortMessage(req.signal));
      const res = await this.once(url, method, headers, body, deadline, req.timeoutMs, cap, req.signal);
      const location = res.headers.location;
      if ([301, 302, 303, 307, 308].includes(res.status) && location && hop < this.maxRedirects) {
        const next = new URL(location, url);
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = method === 'HEAD' ? 'HEAD' : 'GET';
          body = undefined;
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-(type|length)$/i.test(k)));
        }
        if (next.origin !== url.origin) {
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => CROSS_ORIGIN_SAFE_HEADERS.has(k.toLowerCase())));
        }
        url = next;
        continue;
      }
      return res;
    }
  }

  private once(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    deadline: number,
    timeoutMs: number,
    cap: { bytes: number; message: string },
    signal?: AbortSignal,
  ): Promise<HttpResponse> {
    return new Promise<HttpResponse>((resolve, reject) => {
      const isHttps = url.protocol === 'https:';
      const outHeaders: Record<string, string> = {};
      const lower = new Set<string>();
      for (const [k, v] of Object.entries(headers)) {
        outHeaders[k] = v;
        lower.add(k.toLowerCase());
      }
      if (!lower.has('user-agent')) outHeaders['user-agent'] = this.userAgent;
      if (!lower.has('accept-encoding')) outHeaders['accept-encoding'] = 'gzip, deflate, br';
      if (body !== undefined && !lower.has('content-length')) outHeaders['content-length'] = String(Buffer.byteLength(body));

      let done = false;
      let response: http.IncomingMessage | null = null;
      let decoder: Decoder | null = null;
      const fail = (err: Error) => {
        if (done) return;
        done = true;
        cleanup();
        // Everything still working for this answer stops with it: the socket, and a decoder, which would
        // otherwise go on inflating the input it holds (3 KB of brotli stand for GBs) after the refusal.
        decoder?.destroy();
        response?.destroy();
        r.destroy();
        reject(err);
      };
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        reject(new Error(`request timed out after ${timeoutMs} ms`));
        return;
      }
      const r = (isHttps ? https : http).request(
        url,
        {
          method,
          headers: outHeaders,
          agent: isHttps ? this.httpsAgent : this.httpAgent,
          lookup: this.lookup,
        },
        (res) => {
          response = res;
          if (done) {
            res.destroy();
            return;
          }
          const collected = new BodyBuffer(cap.bytes);
          const tooLarge = () => fail(new Error(cap.message));
          const unreadable = (err: Error) => fail(new Error(`could not read the response: ${err.message}`));
          const finish = () => {
            if (done) return;
            done = true;
            cleanup();
            resolve({ status: res.statusCode ?? 0, headers: flattenHeaders(res.headers), body: collected.text() });
          };
          res.on('error', unreadable);
          res.on('close', () => {
            if (!res.complete) unreadable(new Error('the connection closed before the body ended'));
          });
          const dec = decoderFor(String(res.headers['content-encoding'] ?? '').trim().toLowerCase());
          decoder = dec;
          let feed: (chunk: Buffer) => void;
          let ended: () => void;
          if (dec === null) {
            feed = (chunk) => {
              if (!collected.append(chunk)) tooLarge();
            };
            ended = finish;
          } else {
            const input = new DecoderInput(dec, res);
            feed = (chunk) => input.write(chunk);
            ended = () => input.end();
            dec.on('data', (chunk: Buffer) => {
              if (done) return;
              if (!collected.append(chunk)) tooLarge();
            });
            dec.on('error', unreadable);
            dec.on('end', finish);
          }
          // Bytes on the wire count against the cap too (a compressed stream that inflates to little would
          // otherwise be read until the timeout), and so do the pieces they come in (see MIN_PIECE_BYTES).
          let wire = 0;
          let pieces = 0;
          res.on('data', (chunk: Buffer) => {
            if (done) return;
            wire += chunk.length;
            pieces++;
            if (wire > cap.bytes) tooLarge();
            else if (pieces > FREE_PIECES && pieces * MIN_PIECE_BYTES > wire) {
              fail(new Error(`response body arrives in too many small pieces (${pieces} pieces for ${wire} bytes; past ${FREE_PIECES} pieces they must average ${MIN_PIECE_BYTES} bytes)`));
            } else feed(chunk);
          });
          res.on('end', () => {
            if (!done) ended();
          });
        },
      );
      const timer = setTimeout(() => fail(new Error(`request timed out after ${timeoutMs} ms`)), remaining);
      const onAbort = () => fail(new Error(signal ? abortMessage(signal) : 'request aborted'));
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      r.on('error', (err: Error) => fail(err.message.startsWith('refused') ? err : new Error(`request to ${url.host} failed: ${err.message}`)));
      if (body !== undefined) r.end(body);
      else r.end();
    });
  }

  /** Closes pooled connections. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
