// Source run inside the isolate: the prelude that every call runs first, and the wrapper that turns the
// user's code into the body of an async function called with the bindings.

// Runs first in every call: takes the per-call inputs from globals, in a reused context removes what an
// earlier call left (on the host's word, harden.ts), installs console and fetch, and defines the wrapper
// that calls the user function and serializes the outcome.
export const PRELUDE = `(function () {
  const g = globalThis;
  const stringify = JSON.stringify, parse = JSON.parse;
  // __weftIn: a wipe flag ('W' or '-'), a fetch flag ('F' or '-'), then the inputs as JSON.
  let raw, hostFetch;
  if (typeof g.__weftEnter === 'function') {
    // A reused context (harden.ts): its entry checks the slots and, on 'W', removes an earlier call's globals.
    const slots = g.__weftEnter();
    if (slots === null) throw new Error('weft:unclean');
    raw = slots[0]; hostFetch = slots[1];
  } else {
    raw = g.__weftIn; delete g.__weftIn;
    hostFetch = g.__weftFetch; delete g.__weftFetch;
  }
  if (raw[1] !== 'F') hostFetch = undefined;
  const input = raw.slice(2);
  const logs = [];
  // Console output one call hands back: 1,000 lines of at most 10,000 characters, 1 MiB in all (the run's trace
  // keeps less still, engine/trace.ts); past that a line says so and the rest is dropped here.
  let logChars = 0;
  let logsFull = false;
  const fmt = (v) => {
    if (typeof v === 'string') return v;
    if (v instanceof Error) return String(v.stack || (v.name + ': ' + v.message));
    try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch (e) { return String(v); }
  };
  const writer = (level) => (...args) => {
    if (logsFull || logs.length >= 1000) return;
    let m = args.map(fmt).join(' ');
    if (m.length > 10000) m = m.slice(0, 10000) + '…';
    if (logChars + m.length > 1048576) {
      logsFull = true;
      logs.push({ level: 'warn', message: '[console output past 1,048,576 characters in this call was not kept]' });
      return;
    }
    logChars += m.length;
    logs.push({ level, message: m });
  };
  g.console = { log: writer('log'), info: writer('info'), warn: writer('warn'), error: writer('error'), debug: writer('log') };
  const toHeaders = (h) => {
    const out = {};
    if (!h) return out;
    if (Array.isArray(h)) { for (const [k, v] of h) out[String(k)] = String(v); return out; }
    if (typeof h.forEach === 'function' && typeof h.get === 'function') { h.forEach((v, k) => { out[String(k)] = String(v); }); return out; }
    for (const k of Object.keys(h)) out[k] = String(h[k]);
    return out;
  };
  g.fetch = async (url, init) => {
    if (!hostFetch) throw new Error('fetch is not available here');
    init = init || {};
    const body = init.body === undefined || init.body === null ? undefined : (typeof init.body === 'string' ? init.body : JSON.stringify(init.body));
    const req = JSON.stringify({ url: String(url), method: init.method ? String(init.method).toUpperCase() : 'GET', headers: toHeaders(init.headers), body });
    const res = JSON.parse(hostFetch.applySyncPromise(undefined, [req], { arguments: { copy: true } }));
    if (res.error !== undefined) throw new Error(res.error);
    const h = res.headers;
    const headers = {
      get: (n) => { const v = h[String(n).toLowerCase()]; return v === undefined ? null : v; },
      has: (n) => h[String(n).toLowerCase()] !== undefined,
      forEach: (cb) => { for (const k of Object.keys(h)) cb(h[k], k); },
      entries: () => Object.entries(h)[Symbol.iterator](),
      keys: () => Object.keys(h)[Symbol.iterator](),
      [Symbol.iterator]: () => Object.entries(h)[Symbol.iterator](),
      toJSON: () => h,
    };
    return {
      ok: res.status >= 200 && res.status < 300, status: res.status, statusText: '', url: String(url), headers,
      text: async () => res.body,
      json: async () => JSON.parse(res.body),
    };
  };
  g.__weftMain = (fn) => {
    delete g.__weftMain;
    const errText = (e) => {
      if (e instanceof Error) return (e.name && e.name !== 'Error' ? e.name + ': ' : '') + e.message;
      try { return typeof e === 'string' ? e : JSON.stringify(e); } catch (x) { return String(e); }
    };
    return Promise.resolve()
      .then(() => fn.apply(undefined, input === undefined ? [] : parse(input)))
      .then((value) => {
        try {
          return stringify({ ok: true, value: value === undefined ? null : value, logs });
        } catch (e) {
          return stringify({ ok: false, error: 'the returned value cannot be serialized as JSON: ' + errText(e), logs });
        }
      }, (e) => stringify({ ok: false, error: errText(e), logs }));
  };
})();`;

/** Source of one call: the prelude, then the user's code as the body of an async function of `names`. */
export function functionSource(code: string, names: string[]): string {
  return `${PRELUDE}\n__weftMain(async function (${names.join(', ')}) {\n${code}\n});`;
}

/** Lines before the user's code in `functionSource`: the prelude and the wrapper's first line. */
export const CODE_LINE_OFFSET = PRELUDE.split('\n').length + 1;
