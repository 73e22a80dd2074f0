import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuardedHttp, refusedAddressReason } from '../../src/net/guarded-http.js';

let server: http.Server;
let port = 0;
let base = '';
const strict = new GuardedHttp();
const open = new GuardedHttp({ allowPrivateNetwork: true, maxResponseBytes: 64 * 1024 });

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      if (url === '/hang') return;
      if (url === '/big') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('x'.repeat(100 * 1024));
        return;
      }
      if (url === '/gzip') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(zlib.gzipSync(JSON.stringify({ zipped: true })));
        return;
      }
      if (url === '/redirect') {
        res.writeHead(302, { location: '/echo?from=redirect' });
        res.end();
        return;
      }
      res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
      res.end(JSON.stringify({ url, method: req.method, body: Buffer.concat(chunks).toString(), custom: req.headers['x-custom'] ?? null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  strict.close();
  open.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const get = (client: GuardedHttp, url: string, extra: Partial<Parameters<GuardedHttp['request']>[0]> = {}) =>
  client.request({ url, method: 'GET', headers: {}, timeoutMs: 2000, ...extra });

describe('GuardedHttp (default: internal addresses refused)', () => {
  it.each([
    [`http://127.0.0.1:PORT/`, /refused to connect to 127\.0\.0\.1: a loopback address/],
    ['http://10.1.2.3/', /refused to connect to 10\.1\.2\.3: a private address/],
    ['http://169.254.169.254/latest/meta-data/', /refused to connect to 169\.254\.169\.254: a link-local address/],
    [`http://[::1]:PORT/`, /refused to connect to ::1: a loopback address/],
    ['http://[::ffff:127.0.0.1]/', /refused to connect to ::ffff:7f00:1: a loopback address/],
    ['http://2130706433/', /refused to connect to 127\.0\.0\.1/],
    ['http://100.64.0.1/', /carrier-grade NAT/],
    ['http://[fd00::1]/', /unique local/],
    ['http://0.0.0.0/', /unspecified/],
    ['http://224.0.0.1/', /multicast/],
  ])('refuses %s', async (url, message) => {
    await expect(get(strict, url.replace('PORT', String(port)))).rejects.toThrow(message);
  });

  it('refuses a host name that resolves to loopback (checked after DNS)', async () => {
    await expect(get(strict, `http://localhost:${port}/`)).rejects.toThrow(/refused to connect to localhost: it resolves to (127\.0\.0\.1|::1), a loopback address/);
  });

  it('refuses non-http schemes and bad URLs', async () => {
    await expect(get(strict, 'file:///etc/passwd')).rejects.toThrow('refused: only http and https URLs are allowed (got file)');
    await expect(get(open, 'ftp://example.com/')).rejects.toThrow(/only http and https/);
    await expect(get(strict, 'not a url')).rejects.toThrow('invalid URL: not a url');
  });

  it('classifies addresses', () => {
    expect(refusedAddressReason('8.8.8.8')).toBeNull();
    expect(refusedAddressReason('2606:4700:4700::1111')).toBeNull();
    expect(refusedAddressReason('172.20.0.1')).toBe('private');
    expect(refusedAddressReason('192.168.1.1')).toBe('private');
    expect(refusedAddressReason('fe80::1')).toBe('link-local');
    expect(refusedAddressReason('64:ff9b::a9fe:a9fe')).toBe('link-local');
  });
});

describe('GuardedHttp with allowPrivateNetwork', () => {
  it('sends method, headers and body; returns status, lower-cased headers and text', async () => {
    const res = await open.request({ url: `${base}/echo?q=1`, method: 'POST', headers: { 'X-Custom': 'v' }, body: '{"a":1}', timeoutMs: 2000 });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['set-cookie']).toBe('a=1, b=2');
    expect(JSON.parse(res.body)).toEqual({ url: '/echo?q=1', method: 'POST', body: '{"a":1}', custom: 'v' });
  });

  it('reaches localhost by name', async () => {
    expect((await get(open, `http://localhost:${port}/x`)).status).toBe(201);
  });

  it('decompresses and follows redirects', async () => {
    expect(JSON.parse((await get(open, `${base}/gzip`)).body)).toEqual({ zipped: true });
    const r = await get(open, `${base}/redirect`);
    expect(JSON.parse(r.body).url).toBe('/echo?from=redirect');
  });

  it('caps the response size', async () => {
    await expect(get(open, `${base}/big`)).rejects.toThrow('response body exceeds the limit of 64 KiB');
    const roomy = new GuardedHttp({ allowPrivateNetwork: true });
    expect((await get(roomy, `${base}/big`)).body).toHaveLength(100 * 1024);
    roomy.close();
  });

  it('honours the timeout', async () => {
    // '/hang' never answers: the rejection naming the timeout can only come from the timeout.
    await expect(get(open, `${base}/hang`, { timeoutMs: 100 })).rejects.toThrow('request timed out after 100 ms');
  });

  it('honours the abort signal', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('stop')), 50);
    await expect(get(open, `${base}/hang`, { signal: ac.signal, timeoutMs: 5000 })).rejects.toThrow('request aborted: stop');
    const pre = new AbortController();
    pre.abort();
    await expect(get(open, `${base}/x`, { signal: pre.signal })).rejects.toThrow(/request aborted/);
  });
});
