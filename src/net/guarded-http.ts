// HttpPort adapter with SSRF protection. Only http(s) URLs; literal IPs are checked before
// connecting and host names are resolved by our own lookup hook, which checks every resolved
// address and is the lookup the socket actually connects with (no DNS-rebinding window).
// Refused unless allowPrivateNetwork: private, loopback, link-local, CGNAT, multicast,
// unspecified, reserved/documentation ranges, IPv6 ULA/link-local/loopback, and IPv6 forms that
// embed a refused IPv4 address. Redirects are followed (each hop checked), responses are capped
// (10 MiB by default, after decompression), timeouts and AbortSignals are honoured.
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

export class GuardedHttp implements HttpPort {
  private readonly allowPrivate: boolean;
  private readonly maxBytes: number;
  private readonly maxRedirects: number;
  private readonly userAgent: string;
  // Own agents: pooled sockets are never shared with a differently configured instance.
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 256 });

  constructor(opts: GuardedHttpOptions = {}) {
    this.allowPrivate = opts.allowPrivateNetwork === true;
    this.maxBytes = opts.maxResponseBytes ?? 10 * MIB;
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

  async request(req: HttpRequest): Promise<HttpResponse> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      throw new Error(`invalid URL: ${req.url}`);
    }
    if (!/^[A-Za-z]+$/.test(req.method)) throw new Error(`invalid HTTP method: ${req.method}`);
    const deadline = Date.now() + Math.max(1, req.timeoutMs);
    let method = req.method.toUpperCase();
    let body = req.body;
    let headers = { ...req.headers };
    for (let hop = 0; ; hop++) {
      this.check(url);
      if (req.signal?.aborted) throw new Error(abortMessage(req.signal));
      const res = await this.once(url, method, headers, body, deadline, req.timeoutMs, req.signal);
      const location = res.headers.location;
      if ([301, 302, 303, 307, 308].includes(res.status) && location && hop < this.maxRedirects) {
        const next = new URL(location, url);
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = method === 'HEAD' ? 'HEAD' : 'GET';
          body = undefined;
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-(type|length)$/i.test(k)));
        }
        if (next.origin !== url.origin) {
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^(authorization|cookie)$/i.test(k)));
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
      const fail = (err: Error) => {
        if (done) return;
        done = true;
        cleanup();
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
          const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
          let stream: NodeJS.ReadableStream = res;
          if (encoding === 'gzip' || encoding === 'x-gzip') stream = res.pipe(zlib.createGunzip());
          else if (encoding === 'deflate') stream = res.pipe(zlib.createInflate());
          else if (encoding === 'br') stream = res.pipe(zlib.createBrotliDecompress());
          const chunks: Buffer[] = [];
          let size = 0;
          stream.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > this.maxBytes) {
              res.destroy();
              fail(new Error(`response body exceeds the limit of ${formatBytes(this.maxBytes)}`));
              return;
            }
            chunks.push(chunk);
          });
          stream.on('error', (err: Error) => fail(new Error(`could not read the response: ${err.message}`)));
          stream.on('end', () => {
            if (done) return;
            done = true;
            cleanup();
            resolve({ status: res.statusCode ?? 0, headers: flattenHeaders(res.headers), body: Buffer.concat(chunks).toString('utf8') });
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
