// Source run once in a context that serves many calls of one workspace (WEFT_SANDBOX_CONTEXTS=workspace;
// docs/architecture.md, "Sandbox contexts"). What one call could leave behind for the next lives in two
// places: the realm's shared objects (built-ins, their prototypes, the intrinsics reached through syntax)
// and the global object's own properties. This script makes the first immutable and installs
// `__weftEnter`, which the prelude calls first: it hands over the call's inputs and removes any global
// property an earlier call added; and `__weftRelease`, which the host runs when a call ends to remove them
// at once.
//
// Written as a string: it runs inside the isolate, never in the host.
export const HARDEN_SOURCE = `(function () {
  'use strict';
  const g = globalThis;
  const O = Object, R = Reflect;
  const freeze = O.freeze, getProto = O.getPrototypeOf, describe = O.getOwnPropertyDescriptor;
  const define = O.defineProperty, isExtensible = O.isExtensible, hasOwn = O.hasOwn;
  const ownKeys = R.ownKeys, remove = R.deleteProperty;
  const fail = (what) => { throw new Error('weft: could not harden the context: ' + what); };
  const isObject = (v) => (typeof v === 'object' && v !== null) || typeof v === 'function';

  // Deferred callbacks could run during a later call and see its globals; regexp statics keep the last
  // match's input. console is the prelude's, per call.
  for (const name of ['WeakRef', 'FinalizationRegistry', 'console']) if (!remove(g, name)) fail(name);
  for (const name of ['$1', '$2', '$3', '$4', '$5', '$6', '$7', '$8', '$9', 'input', '$_', 'lastMatch', '$&',
    'lastParen', '$+', 'leftContext', '$\`', 'rightContext', "$'"]) {
    if (!remove(RegExp, name)) fail('RegExp.' + name);
  }

  // Every object reachable from the global object and from the intrinsics that only syntax reaches. Walked
  // once: what the steps below add (accessors, the entry function) is frozen where it is made.
  const reachable = () => {
    const seen = new Set();
    const stack = [];
    const add = (v) => { if (isObject(v) && v !== g && !seen.has(v)) { seen.add(v); stack.push(v); } };
    for (const key of ownKeys(g)) { const d = describe(g, key); add(d.value); add(d.get); add(d.set); }
    add(getProto(g));
    add(getProto(function* () {}));
    add(getProto(async function () {}));
    add(getProto(async function* () {}));
    add(getProto([][Symbol.iterator]()));
    add(getProto(new Map()[Symbol.iterator]()));
    add(getProto(new Set()[Symbol.iterator]()));
    add(getProto(''[Symbol.iterator]()));
    add(getProto(/a/[Symbol.matchAll]('a')));
    if (typeof Intl.Segmenter === 'function') {
      const segments = new Intl.Segmenter().segment('a');
      add(getProto(segments));
      add(getProto(segments[Symbol.iterator]()));
    }
    while (stack.length > 0) {
      const o = stack.pop();
      for (const key of ownKeys(o)) { const d = describe(o, key); add(d.value); add(d.get); add(d.set); }
      add(getProto(o));
    }
    return seen;
  };

  // A frozen prototype's data properties cannot be shadowed by assignment on instances (the "override
  // mistake": this.name = ... in an Error subclass would throw). These commonly shadowed ones become
  // accessors whose setter gives the instance its own property instead.
  const shadowed = ['constructor', 'toString', 'toLocaleString', 'valueOf', 'name', 'message', 'hasOwnProperty',
    'toJSON', Symbol.toStringTag];
  const tame = (proto, key) => {
    const d = describe(proto, key);
    if (d === undefined || !('value' in d) || !d.writable) return;
    const value = d.value;
    define(proto, key, {
      get: freeze({ get() { return value; } }.get),
      set: freeze({ set(v) {
        if (this === proto) throw new TypeError('Cannot assign to read only property ' + String(key) + ' of a shared built-in');
        if (!isObject(this)) return;
        define(this, key, { value: v, writable: true, enumerable: true, configurable: true });
      } }.set),
      enumerable: d.enumerable,
      configurable: false,
    });
  };
  const shared = reachable();
  for (const o of shared) {
    const c = hasOwn(o, 'constructor') ? describe(o, 'constructor').value : undefined;
    if (isObject(c) && c.prototype === o) for (const key of shadowed) tame(o, key);
  }

  // Removes every global property a call added. False when that is not possible (a property made
  // non-configurable, the global object's prototype replaced or its extension prevented): the context is
  // then dropped.
  let baseline;
  const baseProto = getProto(g);
  const clean = () => {
    if (getProto(g) !== baseProto || !isExtensible(g)) return false;
    const keys = ownKeys(g);
    for (let i = 0; i < keys.length; i++) if (!baseline.has(keys[i]) && !remove(g, keys[i])) return false;
    return true;
  };
  // The prelude's first step in every call. The host writes __weftIn (two flag characters, then the
  // inputs as JSON) and, when the call may fetch, __weftFetch, as data properties: isolated-vm defines
  // them, replacing any accessor a call left there without calling it. A call can only block those writes
  // by making a slot non-configurable, which this sees before it reads anything. The first flag asks
  // for the wipe (a context an earlier call used). Returns [flags and inputs, fetch], or null when the context
  // cannot serve the call.
  const slot = (name) => {
    const d = describe(g, name);
    if (d === undefined) return [true, undefined];
    if (!d.configurable || !('value' in d)) return [false];
    remove(g, name);
    return [true, d.value];
  };
  const enter = () => {
    const input = slot('__weftIn');
    const fetch = slot('__weftFetch');
    if (!input[0] || !fetch[0] || typeof input[1] !== 'string') return null;
    return input[1][0] === 'W' && !clean() ? null : [input[1], fetch[1]];
  };
  define(g, '__weftEnter', { value: freeze(enter), writable: true, enumerable: false, configurable: true });
  // Run by the host when a call ends, so that an idle context holds none of its data (memory an idle context
  // kept would count against the isolate's limit, which other workspaces' calls share).
  define(g, '__weftRelease', { value: freeze(() => clean()), writable: true, enumerable: false, configurable: true });
  // Every global binding is fixed.
  for (const key of ownKeys(g)) {
    const d = describe(g, key);
    if ('value' in d) define(g, key, { writable: false, configurable: false });
    else define(g, key, { configurable: false });
  }
  baseline = new Set(ownKeys(g));
  for (const o of shared) freeze(o);
  return true;
})();`;
