import { afterEach, describe, expect, it } from 'vitest';
import { IsolatedVmSandbox, SandboxError } from '../../src/sandbox/isolated-vm.js';

// Sandbox slots are shared fairly between workspaces, and a call's timeout starts when its code
// starts (docs/architecture.md, Where limits are enforced: sandbox memory and time). The order in
// which waiters are served is checked without clocks in fair-pool.test.ts.
let sandbox: IsolatedVmSandbox | undefined;
afterEach(() => {
  sandbox?.dispose(); // also stops any infinite loop still running
  sandbox = undefined;
});

const settle = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e instanceof SandboxError ? e.message : String(e)));

describe('IsolatedVmSandbox fairness', () => {
  it("one workspace's infinite loops filling the pool do not stall another workspace's call", async () => {
    sandbox = new IsolatedVmSandbox({ poolSize: 2, pureCode: false });
    const flooder = sandbox.forTenant('workspace-a');
    const victim = sandbox.forTenant('workspace-b');
    let floodSettled = 0;
    const flood = Array.from({ length: 4 }, () =>
      settle(flooder.run({ code: 'while (true) {}', bindings: {}, timeoutMs: 60_000 })).finally(() => floodSettled++));
    await new Promise((r) => setTimeout(r, 300)); // the loops are running and holding the pool
    const r = await victim.run({ code: 'return 1', bindings: {}, timeoutMs: 10_000 });
    expect(r.value).toBe(1);
    // The flood's loops only end when the sandbox is disposed below, so the victim was served
    // while they still held the pool.
    expect(floodSettled).toBe(0);
    // A second call of the other workspace is served too (round-robin), not queued behind the flood.
    expect((await victim.run({ code: 'return 2', bindings: {}, timeoutMs: 10_000 })).value).toBe(2);
    expect(floodSettled).toBe(0);
    sandbox.dispose();
    expect(await Promise.all(flood)).toHaveLength(4);
  }, 30_000);

  it("a call that waited for a slot still gets its full timeout once it starts", async () => {
    sandbox = new IsolatedVmSandbox({ poolSize: 1, pureCode: false });
    const t = sandbox.forTenant('w');
    // The first call holds the only isolate for about 2 s; the second waits, then needs 1.5 s of
    // its 3 s timeout. Counting the wait against it would fail it at about 3 s.
    const first = settle(t.run({ code: 'while (true) {}', bindings: {}, timeoutMs: 2_000 }));
    const second = t.run({ code: 'const end = Date.now() + 1500; while (Date.now() < end) {} return "done"', bindings: {}, timeoutMs: 3_000 });
    expect(await first).toMatch(/timed out after 2000 ms/);
    expect((await second).value).toBe('done');
  }, 30_000);

  it('waiting for a slot is bounded by the abort signal, not the timeout', async () => {
    sandbox = new IsolatedVmSandbox({ poolSize: 1, pureCode: false });
    const t = sandbox.forTenant('w');
    const hog = settle(t.run({ code: 'while (true) {}', bindings: {}, timeoutMs: 20_000 }));
    const ac = new AbortController();
    const waiting = settle(t.run({ code: 'return 1', bindings: {}, timeoutMs: 100, signal: ac.signal }));
    await new Promise((r) => setTimeout(r, 500)); // well past its 100 ms timeout: still waiting
    ac.abort(new Error('run cancelled'));
    expect(await waiting).toBe('run cancelled');
    sandbox.dispose();
    await hog;
  }, 30_000);
});
