// Contexts reused between calls of one workspace (contexts: 'workspace'): what a fresh context gives must
// still hold (docs/architecture.md, "Sandbox contexts"). Each case uses its own sandbox of one isolate, so
// the context a run gets can only be the one an earlier run left, or a new one.
import { afterEach, describe, expect, it } from 'vitest';
import { IsolatedVmSandbox } from '../../src/sandbox/isolated-vm.js';
import { failure } from './failure.js';
import type { SandboxPort } from '../../src/engine/types.js';

const open: IsolatedVmSandbox[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.dispose();
});

function reusing(): IsolatedVmSandbox {
  const s = new IsolatedVmSandbox({ contexts: 'workspace', poolSize: 1, pureCode: false });
  open.push(s);
  return s;
}

/** Runs `codes` as the function blocks of one run (one signal), then ends the run as the engine does; waits for the contexts to be idle again. */
async function run(sandbox: SandboxPort, ...codes: string[]): Promise<unknown[]> {
  const ac = new AbortController();
  try {
    const out: unknown[] = [];
    for (const code of codes) out.push((await sandbox.run({ code, bindings: {}, timeoutMs: 2000, signal: ac.signal })).value);
    return out;
  } finally {
    ac.abort(new Error('run ended'));
    // A context goes back to its workspace's idle list once it is wiped (`sandbox` may be a tenant's view).
    await Promise.all(open.map((s) => s.parked()));
  }
}

describe('sandbox contexts reused per workspace', () => {
  it('every call, in the same run or a later one, gets a context an earlier call used with none of its globals', async () => {
    const sandbox = reusing();
    const first = await run(sandbox,
      `globalThis.a = 1; implicitGlobal = 2; globalThis[Symbol.for('k')] = 3;
       Object.defineProperty(globalThis, 'hidden', { value: 4, configurable: true });
       Object.defineProperty(globalThis, 'getter', { get() { return 5; }, configurable: true });
       return [a, implicitGlobal, hidden, getter]`,
      "return [typeof a, typeof implicitGlobal, globalThis[Symbol.for('k')] ?? null, typeof hidden, typeof getter]");
    expect(first).toEqual([[1, 2, 4, 5], ['undefined', 'undefined', null, 'undefined', 'undefined']]);
    const reusedBefore = sandbox.contextStats.reused;
    const [later] = await run(sandbox, "return [typeof a, typeof implicitGlobal, globalThis[Symbol.for('k')] ?? null, typeof hidden, typeof getter]");
    expect(later).toEqual(['undefined', 'undefined', null, 'undefined', 'undefined']);
    expect(sandbox.contextStats.reused).toBe(reusedBefore + 1);
  });

  it('built-ins and the intrinsics reached through syntax cannot be changed', async () => {
    const sandbox = reusing();
    const [attempts] = await run(sandbox, `
      const tries = {
        arrayMethod: () => { 'use strict'; Array.prototype.map = () => 'poisoned'; },
        json: () => { 'use strict'; JSON.stringify = () => 'poisoned'; },
        globalBinding: () => { 'use strict'; globalThis.JSON = {}; },
        generator: () => { 'use strict'; Object.getPrototypeOf(function* () {}).prototype.next = null; },
        iterator: () => { 'use strict'; Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())).poisoned = 1; },
        typedArray: () => { 'use strict'; Object.getPrototypeOf(Int8Array).prototype.fill = null; },
        errorHook: () => { 'use strict'; Error.prepareStackTrace = () => 'poisoned'; },
        objectProto: () => { 'use strict'; Object.prototype.polluted = 1; },
      };
      const out = {};
      for (const [name, f] of Object.entries(tries)) { try { f(); out[name] = 'changed'; } catch (e) { out[name] = e.name; } }
      Array.prototype.sloppy = 1; // sloppy code: silently ignored
      out.sloppy = [].sloppy === undefined ? 'ignored' : 'changed';
      return out;
    `);
    expect(attempts).toEqual({
      arrayMethod: 'TypeError', json: 'TypeError', globalBinding: 'TypeError', generator: 'TypeError', iterator: 'TypeError',
      typedArray: 'TypeError', errorHook: 'TypeError', objectProto: 'TypeError', sloppy: 'ignored',
    });
    const [after] = await run(sandbox, 'return [[1].map((x) => x + 1), JSON.stringify({ a: 1 }), ({}).polluted ?? null]');
    expect(after).toEqual([[2], '{"a":1}', null]);
  });

  it('everything reachable from the global object and from syntax is frozen, except what the call itself added', async () => {
    const sandbox = reusing();
    // An independent walk: every object reachable by property, accessor and prototype.
    const [unfrozen] = await run(sandbox, `
      const seen = new Set();
      const stack = [];
      const add = (v, path) => {
        if (((typeof v === 'object' && v !== null) || typeof v === 'function') && v !== globalThis && !seen.has(v)) { seen.add(v); stack.push([v, path]); }
      };
      const madeBySyntax = [function* () {}, async function () {}, async function* () {}, [][Symbol.iterator](), new Map().entries(),
        new Set().values(), ''[Symbol.iterator](), /a/g[Symbol.matchAll]('a'), new Intl.Segmenter().segment('a'),
        new Intl.Segmenter().segment('a')[Symbol.iterator]()];
      madeBySyntax.forEach((o, i) => add(Object.getPrototypeOf(o), 'syntax' + i));
      add(Object.getPrototypeOf(globalThis), 'global.__proto__');
      const perCall = new Set(['console', 'fetch']);
      for (const key of Reflect.ownKeys(globalThis)) {
        if (perCall.has(key)) continue;
        const d = Object.getOwnPropertyDescriptor(globalThis, key);
        if (d.configurable || d.writable) return ['global binding ' + String(key)];
        add(d.value, String(key)); add(d.get, String(key) + '(get)'); add(d.set, String(key) + '(set)');
      }
      const bad = [];
      while (stack.length) {
        const [o, path] = stack.pop();
        if (!Object.isFrozen(o)) bad.push(path);
        for (const k of Reflect.ownKeys(o)) {
          const d = Object.getOwnPropertyDescriptor(o, k);
          const p = path + '.' + String(k);
          add(d.value, p); add(d.get, p + '(get)'); add(d.set, p + '(set)');
        }
        add(Object.getPrototypeOf(o), path + '.__proto__');
      }
      return bad.length ? bad.slice(0, 10) : seen.size;
    `);
    expect(typeof unfrozen === 'number' && unfrozen > 500, JSON.stringify(unfrozen)).toBe(true);
  });

  it('common ways of shadowing a built-in on an instance keep working', async () => {
    const sandbox = reusing();
    const [out] = await run(sandbox, `
      class NotFound extends Error { constructor(m) { super(m); this.name = 'NotFound'; } }
      const e = new NotFound('gone');
      const o = {}; o.toString = () => 'custom';
      function Legacy() {} Legacy.prototype.toString = function () { return 'legacy'; };
      const d = new Date(0); d.toJSON = () => 'never';
      return [e.name, String(e), e instanceof Error, '' + o, String(new Legacy()), JSON.stringify({ d }), Error.prototype.name, String(new TypeError('t'))];
    `);
    expect(out).toEqual(['NotFound', 'NotFound: gone', true, 'custom', 'legacy', '{"d":"never"}', 'Error', 'TypeError: t']);
  });

  it('globals declared through eval are removed; a context left with a global it cannot remove serves no other run', async () => {
    const sandbox = reusing();
    // Indirect eval's var and function declarations become (deletable) global properties; its let stays in the eval.
    expect(await run(sandbox, "(0, eval)('var viaVar = 2; function viaFn() { return 3 } let local = 4'); return [viaVar, viaFn(), typeof local]")).toEqual([[2, 3, 'undefined']]);
    const reused = sandbox.contextStats.reused;
    expect(await run(sandbox, 'return [typeof viaVar, typeof viaFn]')).toEqual([['undefined', 'undefined']]);
    expect(sandbox.contextStats.reused).toBe(reused + 1);

    await run(sandbox, "Object.defineProperty(globalThis, 'stuck', { value: 1 }); return 1");
    expect(await run(sandbox, 'return typeof stuck')).toEqual(['undefined']);
    await run(sandbox, 'Object.preventExtensions(globalThis); return 1');
    expect(await run(sandbox, 'globalThis.x = 1; return x')).toEqual([1]);
    await run(sandbox, "Object.defineProperty(globalThis, '__weftIn', { value: '[\"forged\"]', writable: true }); return 1");
    expect((await sandbox.run({ code: 'return v', bindings: { v: 'real' }, timeoutMs: 2000, signal: new AbortController().signal })).value).toBe('real');
  });

  it('workspaces never share a context', async () => {
    const sandbox = reusing();
    const a = sandbox.forTenant('workspace-a');
    const b = sandbox.forTenant('workspace-b');
    await run(a, 'return 1');
    const reused = sandbox.contextStats.reused;
    await run(b, 'return 1');
    await run(b, 'return 1');
    expect(sandbox.contextStats.reused).toBe(reused + 1); // b's second run took b's context, never a's
    await run(a, 'return 1');
    expect(sandbox.contextStats.reused).toBe(reused + 2);
  });

  it('a run that timed out or failed in the sandbox does not hand its context on; one whose code threw does', async () => {
    const sandbox = reusing();
    const ac = new AbortController();
    const err = await failure(sandbox.run({ code: 'globalThis.half = 1; while (true) {}', bindings: {}, timeoutMs: 100, signal: ac.signal }));
    expect(err.message).toBe('the code timed out after 100 ms');
    ac.abort();
    await sandbox.parked();
    const reused = sandbox.contextStats.reused;
    expect(await run(sandbox, 'return typeof half')).toEqual(['undefined']);
    expect(sandbox.contextStats.reused).toBe(reused);

    await expect(run(sandbox, "globalThis.thrown = 1; throw new Error('mine')")).rejects.toThrow('mine');
    expect(await run(sandbox, 'return typeof thrown')).toEqual(['undefined']);
    expect(sandbox.contextStats.reused).toBe(reused + 2);

    const bomb = await failure(sandbox.run({ code: 'const a = []; while (true) a.push(new Array(1e6).fill(1));', bindings: {}, timeoutMs: 20_000 }));
    expect(bomb.message).toBe('the code exceeded the memory limit of 128 MB');
    expect(await run(sandbox, 'return 2')).toEqual([2]);
  });

  it('an ended run\'s globals are removed at once: an idle context holds none of its memory', async () => {
    const sandbox = reusing();
    // 72 MB each on an isolate limited to 128 MB: the second fits only if the first run's array was let go.
    await run(sandbox.forTenant('a'), 'globalThis.big = new Float64Array(9e6); return big.length');
    expect(await run(sandbox.forTenant('b'), 'const mine = new Float64Array(9e6); return mine.length')).toEqual([9e6]);
    expect(sandbox.contextStats.reused).toBe(0);
  });

  it('console lines belong to the call that wrote them', async () => {
    const sandbox = reusing();
    const ac = new AbortController();
    const first = await sandbox.run({ code: "console.log('one'); globalThis.keep = console; return 1", bindings: {}, timeoutMs: 2000, signal: ac.signal });
    ac.abort();
    await sandbox.parked();
    const second = await sandbox.run({ code: "console.log('two'); return typeof keep", bindings: {}, timeoutMs: 2000, signal: new AbortController().signal });
    expect([first.logs, second.logs, second.value]).toEqual([[{ level: 'log', message: 'one' }], [{ level: 'log', message: 'two' }], 'undefined']);
  });
});
