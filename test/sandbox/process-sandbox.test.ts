// The server's sandbox: isolates in a process of their own (src/sandbox/process-sandbox.ts). What crosses to
// it and back, and what happens when code ends that process.
import { afterEach, describe, expect, it } from 'vitest';
import type { HttpRequest } from '../../src/engine/index.js';
import { ProcessSandbox, SANDBOX_PROCESS_STOPPED } from '../../src/sandbox/process-sandbox.js';

let sandbox: ProcessSandbox | undefined;
afterEach(() => {
  sandbox?.dispose();
  sandbox = undefined;
});

// Calls a callback: outside pure code, so it needs an isolate.
const viaIsolate = (expr: string) => `return [0].map(() => ${expr})[0]`;
const bomb = 'const m = new Map(); for (let i = 0; ; i++) m.set(i, i);';

/**
 * Runs the bomb until it ends the sandbox process: now and then V8 stops one inside its isolate instead (a
 * memory error, no crash).
 */
async function crash(port: { run: ProcessSandbox['run'] }): Promise<void> {
  for (let i = 0; i < 10; i++) {
    const err = await port.run({ code: bomb, bindings: {}, timeoutMs: 30_000 }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    if ((err as Error).message.includes(SANDBOX_PROCESS_STOPPED)) return;
    expect((err as Error).message).toMatch(/memory/);
  }
  throw new Error('the bomb never ended the sandbox process');
}
const open = (opts: ConstructorParameters<typeof ProcessSandbox>[0] = {}) => (sandbox = new ProcessSandbox({ poolSize: 2, contextPerRun: true, ...opts }));

describe('ProcessSandbox', () => {
  it('runs code in the sandbox process: bindings, console lines, errors the code threw, and fetch through the server', async () => {
    const sb = open();
    expect(await sb.run({ code: viaIsolate('n * 2'), bindings: { n: 21 }, timeoutMs: 2000 })).toEqual({ value: 42, logs: [] });
    expect(sb.pid).toBeGreaterThan(0);
    const seen: HttpRequest[] = [];
    const run = new AbortController();
    const http = { request: async (req: HttpRequest) => (seen.push(req), { status: 201, headers: { 'x-a': '1' }, body: `hello ${req.url}` }) };
    const fetched = await sb.run({
      code: 'console.log("before"); const r = await fetch("https://example.test/x", { method: "POST", body: "b" }); return [r.status, await r.text()]',
      bindings: {}, timeoutMs: 2000, http, signal: run.signal,
    });
    expect(fetched.value).toEqual([201, 'hello https://example.test/x']);
    expect(fetched.logs.map((l) => l.message)).toEqual(['before']);
    // The server makes the request, with the run's own signal.
    expect(seen).toMatchObject([{ url: 'https://example.test/x', method: 'POST', body: 'b' }]);
    expect(seen[0]?.signal).toBe(run.signal);
    const thrown = await sb.run({ code: 'console.log("x"); throw new Error("nope")', bindings: {}, timeoutMs: 2000 }).catch((e: unknown) => e);
    expect(thrown).toMatchObject({ name: 'SandboxError', message: expect.stringMatching(/nope/), thrownByCode: true, logs: [{ message: 'x' }] });
    run.abort();
  });

  it("keeps a run's context for its calls, and gives the next run a fresh one", async () => {
    const sb = open();
    const first = new AbortController();
    const count = 'globalThis.k = (globalThis.k ?? 0) + 1; return [k].map((x) => x)[0]';
    expect((await sb.run({ code: count, bindings: {}, timeoutMs: 2000, signal: first.signal })).value).toBe(1);
    expect((await sb.run({ code: count, bindings: {}, timeoutMs: 2000, signal: first.signal })).value).toBe(2);
    // Pure code of a run that has a context goes there too (an earlier call may have changed its built-ins).
    expect((await sb.run({ code: 'return 1 + 1', bindings: {}, timeoutMs: 2000, signal: first.signal })).value).toBe(2);
    expect(sb.contextStats.pure).toBe(0);
    first.abort();
    const second = new AbortController();
    expect((await sb.run({ code: count, bindings: {}, timeoutMs: 2000, signal: second.signal })).value).toBe(1);
    second.abort();
    expect((await sb.run({ code: 'return 1 + 1', bindings: {}, timeoutMs: 2000 })).value).toBe(2);
    expect(sb.contextStats.pure).toBe(1);
  });

  it('stops a call at once when its run is aborted', async () => {
    const sb = open();
    const run = new AbortController();
    const call = sb.run({ code: 'for (;;) {}', bindings: {}, timeoutMs: 30_000, signal: run.signal });
    setTimeout(() => run.abort(new Error('cancelled by the caller')), 200);
    await expect(call).rejects.toThrow('cancelled by the caller');
  });

  it('fails the calls running in a process that code ended, and starts a new one for the next call', async () => {
    const sb = open();
    await sb.run({ code: viaIsolate('1'), bindings: {}, timeoutMs: 2000 });
    const before = { pid: sb.pid, contexts: sb.contextStats };
    await crash(sb);
    expect(await sb.run({ code: viaIsolate('"again"'), bindings: {}, timeoutMs: 2000 })).toEqual({ value: 'again', logs: [] });
    expect(sb.pid).not.toBe(before.pid);
    // The counters go on from the stopped process's (a metric never goes back).
    expect(sb.contextStats.created).toBeGreaterThan(before.contexts.created);
  }, 60_000);

  it('sends a call that was still waiting for an isolate when the process stopped to a new one: it never ran', async () => {
    const sb = open({ poolSize: 1 });
    await sb.run({ code: viaIsolate('1'), bindings: {}, timeoutMs: 2000 });
    // Until a bomb ends the process (now and then V8 stops one inside its isolate instead).
    for (let i = 0; ; i++) {
      const bomb = sb.run({ code: 'const o = {}; for (let i = 0; ; i++) o["k" + i] = i;', bindings: {}, timeoutMs: 30_000 }).then(() => undefined, (e: unknown) => e);
      // The one isolate is the bomb's: this call waits behind it, in the same process.
      const waiting = sb.run({ code: viaIsolate('"waited"'), bindings: {}, timeoutMs: 30_000 });
      const err = await bomb;
      expect(err).toBeInstanceOf(Error);
      expect(await waiting).toEqual({ value: 'waited', logs: [] });
      if ((err as Error).message.includes(SANDBOX_PROCESS_STOPPED)) break;
      expect((err as Error).message).toMatch(/memory/);
      expect(i).toBeLessThan(9);
    }
  }, 60_000);

  it('lets an idle process go, and starts one again when needed', async () => {
    const sb = open({ idleMs: 100 });
    await sb.run({ code: viaIsolate('1'), bindings: {}, timeoutMs: 2000 });
    expect(sb.pid).toBeDefined();
    for (const until = Date.now() + 5000; sb.pid !== undefined && Date.now() < until;) await new Promise((r) => setTimeout(r, 20));
    expect(sb.pid).toBeUndefined();
    expect((await sb.run({ code: viaIsolate('2'), bindings: {}, timeoutMs: 2000 })).value).toBe(2);
  });

  it('refuses calls once disposed', async () => {
    const sb = open();
    sb.dispose();
    await expect(sb.run({ code: viaIsolate('1'), bindings: {}, timeoutMs: 2000 })).rejects.toThrow(/shut down/);
  });

  it('runs apart the calls of workspaces whose code shared a crash, charges the next crash there to its cause, then pauses it', async () => {
    const sb = open({ crashBudget: { strikesToPause: 1, firstPauseMs: 60_000 } });
    const a = sb.forTenant('a');
    const b = sb.forTenant('b');
    await a.run({ code: viaIsolate('1'), bindings: {}, timeoutMs: 2000 });
    const sharedPid = sb.pid;
    // b's code has its isolate and runs when a's ends the process: either could have been the cause.
    const busy = b.run({ code: viaIsolate('(() => { const t = Date.now(); while (Date.now() - t < 40000) {} return 1; })()'), bindings: {}, timeoutMs: 50_000 });
    await new Promise((r) => setTimeout(r, 300));
    await crash(a);
    await expect(busy).rejects.toThrow(SANDBOX_PROCESS_STOPPED);
    expect(sb.crashStats).toEqual({ stops: 1, charged: 0, refused: 0 });
    // Both are suspects: their calls now run in a process apart; a third workspace stays in the shared one.
    expect(await b.run({ code: viaIsolate('"apart"'), bindings: {}, timeoutMs: 2000 })).toEqual({ value: 'apart', logs: [] });
    const apartPid = sb.apartPid;
    expect(apartPid).toBeGreaterThan(0);
    expect(await sb.forTenant('c').run({ code: viaIsolate('"shared"'), bindings: {}, timeoutMs: 2000 })).toEqual({ value: 'shared', logs: [] });
    expect(sb.pid).toBeGreaterThan(0);
    expect(sb.pid).not.toBe(apartPid);
    expect(sb.pid).not.toBe(sharedPid);
    // Alone in that process, a's crash can only be a's: charged, and with a budget of one crash, paused.
    await crash(a);
    expect(sb.crashStats).toEqual({ stops: 2, charged: 1, refused: 0 });
    await expect(a.run({ code: viaIsolate('1'), bindings: {}, timeoutMs: 2000 })).rejects.toThrow(/refused in this workspace for \d+ s more/);
    // Pure code is the server's: never refused.
    expect(await a.run({ code: 'return 6 * 7', bindings: {}, timeoutMs: 2000 })).toEqual({ value: 42, logs: [] });
    expect(await b.run({ code: viaIsolate('"still"'), bindings: {}, timeoutMs: 2000 })).toEqual({ value: 'still', logs: [] });
    expect(sb.crashStats).toEqual({ stops: 2, charged: 1, refused: 1 });
  }, 120_000);
});
