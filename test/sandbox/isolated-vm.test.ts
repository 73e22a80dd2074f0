import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuardedHttp } from '../../src/net/guarded-http.js';
import { IsolatedVmSandbox } from '../../src/sandbox/isolated-vm.js';
import { failure } from './failure.js';

// Both context modes must behave the same to the code they run (docs/architecture.md, "Sandbox contexts").
const sandboxes = { fresh: new IsolatedVmSandbox({ pureCode: false }), workspace: new IsolatedVmSandbox({ contexts: 'workspace', pureCode: false }) };
const httpPort = new GuardedHttp({ allowPrivateNetwork: true });
let server: http.Server;
let base = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/hang') return; // never answers
    res.writeHead(200, { 'content-type': 'application/json', 'x-test': 'yes' });
    res.end(JSON.stringify({ path: req.url, method: req.method }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  sandboxes.fresh.dispose();
  sandboxes.workspace.dispose();
  httpPort.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

for (const contexts of ['fresh', 'workspace'] as const) describe(`IsolatedVmSandbox, ${contexts} contexts`, () => {
  const sandbox = sandboxes[contexts];
  const exec = (code: string, bindings: Record<string, unknown> = {}, timeoutMs = 2000) => sandbox.run({ code, bindings, timeoutMs });

  it('runs an async function body with bindings; values cross as JSON', async () => {
    const r = await exec('await null; return { sum: a + b.n, s: typeof s, d: new Date(0), u: undefined, list: [1, undefined] }', { a: 1, b: { n: 2 }, s: 'x' });
    expect(r.value).toEqual({ sum: 3, s: 'string', d: '1970-01-01T00:00:00.000Z', list: [1, null] });
    expect((await exec('return')).value).toBeNull();
  });

  it('exposes no host objects: no process, require, or constructor walk out', async () => {
    const r = await exec(`
      const probes = {};
      probes.process = typeof process;
      probes.require = typeof require;
      probes.globalProcess = typeof globalThis.process;
      probes.walk = (function () {}).constructor('return typeof process')();
      probes.thisWalk = this === undefined ? 'undefined' : this.constructor.constructor('return typeof process')();
      probes.consoleWalk = console.log.constructor.constructor('return typeof process')();
      probes.fetchWalk = fetch.constructor.constructor('return typeof require')();
      try { await import('node:fs'); probes.import = 'imported'; } catch (e) { probes.import = 'blocked'; }
      return probes;
    `);
    expect(r.value).toEqual({
      process: 'undefined', require: 'undefined', globalProcess: 'undefined', walk: 'undefined',
      thisWalk: 'undefined', consoleWalk: 'undefined', fetchWalk: 'undefined', import: 'blocked',
    });
  });

  it('no call sees what an earlier call left', async () => {
    await exec('globalThis.leak = 42; Array.prototype.evil = 1; return 1');
    expect((await exec('return [typeof leak, [].evil]')).value).toEqual(['undefined', null]);
  });

  it('captures console output by level', async () => {
    const r = await exec("console.log('a', 1, { b: 2 }); console.info('i'); console.warn('w'); console.error(new Error('e')); return 0");
    expect(r.logs.map((l) => l.level)).toEqual(['log', 'info', 'warn', 'error']);
    expect(r.logs[0].message).toBe('a 1 {"b":2}');
    expect(r.logs[3].message).toContain('Error: e');
  });

  it('reports user errors with their type, keeping earlier logs', async () => {
    const err = await failure(exec("console.log('before'); null.x"));
    expect(err.message).toMatch(/^TypeError: Cannot read properties of null/);
    expect(err.logs).toEqual([{ level: 'log', message: 'before' }]);
    expect((await failure(exec("throw 'plain'"))).message).toBe('plain');
    expect((await failure(exec('return 10n'))).message).toMatch(/cannot be serialized as JSON/);
    expect((await failure(exec('const ok = 1;\nreturn {'))).message).toBe("SyntaxError: Unexpected token ')' (line 3)");
  });

  it('stops an infinite loop at the timeout, and keeps working', async () => {
    // The loop never ends by itself: that the call returns at all, with this message, is the timeout at work.
    expect((await failure(exec('while (true) {}', {}, 150))).message).toBe('the code timed out after 150 ms');
    expect((await exec('return 1')).value).toBe(1);
  });

  it('times out code that never settles', async () => {
    expect((await failure(exec('await new Promise(() => {})', {}, 100))).message).toBe('the code timed out after 100 ms');
  });

  it('survives a memory bomb: the isolate is replaced', async () => {
    const err = await failure(exec('const a = []; while (true) a.push(new Array(1e6).fill(1));', {}, 20_000));
    expect(err.message).toBe('the code exceeded the memory limit of 128 MB');
    expect((await exec('return 2')).value).toBe(2);
    const many = await Promise.all(Array.from({ length: 10 }, (_, i) => exec('return i * 2', { i })));
    expect(many.map((m) => m.value)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
  });

  it('fetch goes through the HTTP port given in the request, and only then', async () => {
    const r = await sandbox.run({
      code: "const r = await fetch(base + '/x?y=1', { method: 'post', body: { a: 1 } }); return { status: r.status, ok: r.ok, h: r.headers.get('X-Test'), j: await r.json() };",
      bindings: { base }, timeoutMs: 2000, http: httpPort,
    });
    expect(r.value).toEqual({ status: 200, ok: true, h: 'yes', j: { path: '/x?y=1', method: 'POST' } });
    expect((await failure(exec("return await fetch('http://example.com')"))).message).toBe('fetch is not available here');
    const strict = new GuardedHttp();
    const refused = await failure(sandbox.run({ code: 'return (await fetch(base)).status', bindings: { base }, timeoutMs: 2000, http: strict }));
    expect(refused.message).toMatch(/refused to connect to 127\.0\.0\.1/);
    strict.close();
  });

  it('the timeout covers code after an awaited fetch', async () => {
    const err = await failure(sandbox.run({ code: "await fetch(base + '/ok'); while (true) {}", bindings: { base }, timeoutMs: 300, http: httpPort }));
    expect(err.message).toBe('the code timed out after 300 ms');
    expect((await exec('return 3')).value).toBe(3);
  });

  it('aborts through the signal', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('cancelled by test')), 50);
    // '/hang' never answers and the timeout is far off: only the signal can end this call with its reason.
    const err = await failure(sandbox.run({ code: "await fetch(base + '/hang'); return 1", bindings: { base }, timeoutMs: 600_000, http: httpPort, signal: ac.signal }));
    expect(err.message).toBe('cancelled by test');
  });

  it('handles many concurrent calls', async () => {
    const rs = await Promise.all(Array.from({ length: 200 }, (_, i) => exec('return n + 1', { n: i })));
    expect(rs.map((r) => r.value)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('contextPerRun: calls sharing a signal share one fresh context, released when it aborts', async () => {
    const perRun = new IsolatedVmSandbox({ contextPerRun: true, contexts, pureCode: false });
    try {
      const runA = new AbortController();
      const runB = new AbortController();
      await perRun.run({ code: 'globalThis.count = (globalThis.count || 0) + 1; return count', bindings: {}, timeoutMs: 1000, signal: runA.signal });
      const second = await perRun.run({ code: 'globalThis.count = (globalThis.count || 0) + 1; return count', bindings: {}, timeoutMs: 1000, signal: runA.signal });
      // Reused contexts are lent per call: nothing passes between calls, even of one run.
      expect(second.value).toBe(contexts === 'fresh' ? 2 : 1);
      const other = await perRun.run({ code: 'return typeof count', bindings: {}, timeoutMs: 1000, signal: runB.signal });
      expect(other.value).toBe('undefined');
      expect((await perRun.run({ code: "console.log('x'); return 1", bindings: {}, timeoutMs: 1000, signal: runA.signal })).logs).toEqual([{ level: 'log', message: 'x' }]);
      runA.abort();
      await expect(perRun.run({ code: 'return 1', bindings: {}, timeoutMs: 1000, signal: runA.signal })).rejects.toThrow(/abort/i);
      expect((await perRun.run({ code: 'return typeof count', bindings: {}, timeoutMs: 1000 })).value).toBe('undefined');
    } finally {
      perRun.dispose();
    }
  });
});
