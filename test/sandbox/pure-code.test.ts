// Pure code evaluated on the host (docs/architecture.md, "Pure code") must answer exactly what a fresh sandbox
// context answers, or decline. Every case here runs both ways: the evaluator alone, and a sandbox with the
// evaluator off. Written cases pin what is answered and what declines; generated ones look for any
// disagreement across the operators and values the subset allows.
import { afterAll, describe, expect, it } from 'vitest';
import { IsolatedVmSandbox } from '../../src/sandbox/isolated-vm.js';
import { evaluatePureCode } from '../../src/sandbox/pure-code.js';

const sandbox = new IsolatedVmSandbox({ pureCode: false, poolSize: 1 });
afterAll(() => sandbox.dispose());

const inputs: Record<string, unknown> = {
  a: 21, s: 'text', e: '',
  // Parsed, so that `__proto__` is an own property (as inputs crossing as JSON have it); `toString` is data.
  o: JSON.parse('{"x":1,"y":"two","nested":{"z":[1,2]},"list":[3,4],"__proto__":"own","toString":"data"}') as unknown,
  l: [1, 'b', null, { k: 1 }], n: null, b: true, big: 1e21, neg: -3.5,
};

type Outcome = { value: unknown } | { error: string };

async function inSandbox(code: string): Promise<Outcome> {
  try {
    return { value: (await sandbox.run({ code, bindings: inputs, timeoutMs: 2000 })).value };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

function onHost(code: string): { value: unknown } | undefined {
  const names = Object.keys(inputs);
  return evaluatePureCode(code, names, JSON.stringify(names.map((n) => inputs[n])));
}

/** The evaluator's answer, checked against the sandbox's: the same JSON (key order included), or a decline. */
async function agree(code: string): Promise<'answered' | 'declined'> {
  const host = onHost(code);
  if (host === undefined) return 'declined';
  const sandboxed = await inSandbox(code);
  expect('value' in sandboxed ? JSON.stringify(sandboxed.value) : sandboxed, code).toBe(JSON.stringify(host.value));
  return 'answered';
}

describe('pure code on the host', () => {
  it('answers what a fresh context answers for code that only computes from its inputs', async () => {
    const answered = [
      'return { value: a * 2 }',
      'return `${s}:${a}:${n}:${b}:${o.y}`',
      'return o.nested.z[1] + l.length + s.length + s[0]',
      'const x = o.list; let y; return [x?.[1], y, o.missing?.deep, o.missing ?? "fallback", o?.x]',
      'return { ...o, extra: a, [s]: 1, 3: "three", "quoted key": l[3].k }',
      'return { ...l, ...n, ...a, ...b }',
      'return [...l, ...o.list, a]',
      "return { ['__proto__']: 1, x: o.__proto__ }",
      'return o.__proto__ + o.toString + o.toString.length',
      'if (a > 20) { const t = "big"; return t + a } else { return "small" }',
      'if (n) return 1; else if (!b) return 2; return 3',
      "'use strict'; return typeof o + typeof l + typeof n + typeof b + typeof s + typeof a + typeof undefined",
      'return [a / 0, -a / 0, 0 / 0, NaN, Infinity, -0, big, big + 1, 2 ** 60, neg % 2, 7 >>> 1, -7 >> 1, ~a, a ^ 5]',
      'return [s == "text", a == "21", n == undefined, n === undefined, b != 1, l === l, o !== o, "10" < "9", 10 < 9]',
      'return [a && s, n || "none", n ?? 0, e || "empty", e ?? "kept", (a, s)]',
      'return b ? (a > 1 ? "a" : "b") : "c"',
      'return [s[10], s["length"], l[10], l["1"], l["01"], l[-1], a.x, b.y, s.nope]',
      'return',
      ';;',
      'return void a',
      'return { a: 1, a: 2, b: 3, 1: "one", 0: "zero" }',
      'return [1e21 + "", 0.1 + 0.2, 1 / 3, -1e-7, 123456789012345680000]',
      'return `line\\nbreak \\u00e9 \\x41`',
      // The listed built-ins.
      'return [Math.max(a, 1, ...o.list), Math.round(neg), Math.min(), Math.PI, Number.MAX_SAFE_INTEGER, Math.hypot(3, "4")]',
      "return [s.toUpperCase(), s.slice(1, 3), s.split(''), s.split('x', 1), s.includes('ex'), s.padStart(8, '*'), s.repeat(2), s.replaceAll('t', 'T'), s.at(-1), e.trim()]",
      'return [a.toFixed(2), (1234.5678).toFixed(1), neg.toString(2), big.toPrecision(3), (0.000001234).toExponential(1)]',
      "return [l.includes(null), l.indexOf('b'), l.indexOf(o), o.list.join('-'), l.slice(1), o.list.concat(l, 5, [6]), o.nested.z.at(-1)]",
      "return [JSON.stringify(o), JSON.stringify(l, null, 2), JSON.stringify(s), JSON.parse('{\"k\":[1,2]}'), JSON.parse(JSON.stringify(o)).nested]",
      "return [Number('0x10'), Number(), String(a), String(n), Boolean(o), parseInt('12px'), parseFloat('3.5e2'), isNaN('x'), isFinite('1')]",
      'return [Object.keys(o), Object.values(o.nested), Object.entries({ a, s }), Object.keys(l), Array.isArray(l), Number.isInteger(a), Number.parseFloat("1.5")]',
      "return [s?.trim(), n?.trim(), o.missing?.join('-'), s.trim?.()]",
    ];
    for (const code of answered) expect(await agree(code), code).toBe('answered');
  });

  it('declines what could depend on built-ins, what JavaScript rejects, and what is outside the subset', async () => {
    const declined = [
      'return Math.max(...s)', // spreading a string
      'return Math.random', // a built-in as a value
      'return o.hasOwnProperty', // a prototype's property
      'return l.map', // an array's method
      'return s.toUpperCase', // a string's method
      'return "" + o', // an object converted to a primitive
      'return `${l}`',
      'return o == "x"',
      'return -l',
      'return { __proto__: o }', // sets the prototype
      'return { get x() { return 1 } }',
      'return [1, , 2]', // a hole
      'return [...s]', // a string's iterator
      'return { ...s }', // a string's characters
      'return n.x', // a TypeError: the sandbox words it
      'return missing', // a global
      'return this',
      'return await a',
      'let a = 1; return a', // redeclares a parameter: a SyntaxError
      'return x; const x = 1', // the temporal dead zone: a ReferenceError
      'var v = 1; return v',
      'for (;;) {}',
      'return (() => 1)()',
      'a = 2; return a',
      'return /re/',
      'return 1n',
      'return "x" in o',
      'return {',
      'const { x } = o; return x',
      "return l.join('-')", // an object element, converted through its prototype
      'return String(o)',
      "return s.replace('t', '$&$&')", // `$` patterns
      "return s.localeCompare('a')", // not listed
      'return l.map(String)', // a built-in as a value, and a callback
      'const Math = { max: 1 }; return Math.max(1)', // a local, not the global
      "return JSON.stringify(o, ['x'])", // a replacer
      'return JSON.parse(s, n)',
      'return s.repeat(2 ** 21)', // past the string cap before it is built
      "return s.padStart(2 ** 21, '*')",
      'return Math.max.apply(null, l)',
      "return s.constructor('x')",
      'return o.x.trim()', // a number has no `trim`: a TypeError
    ];
    for (const code of declined) expect(onHost(code), code).toBeUndefined();
  });

  it('declines results and strings past its caps, work past its budget, and code and inputs past their sizes', () => {
    // s has 4 characters, so a<k> has 2^(k+2): a16 is at the 2^18 cap, a17 past it.
    const doubling = (last: number) => `const a1 = s + s; ${Array.from({ length: last - 1 }, (_, i) => `const a${i + 2} = a${i + 1} + a${i + 1};`).join(' ')}`;
    expect(onHost(`${doubling(16)} return a16.length`)).toEqual({ value: 2 ** 18 });
    expect(onHost(`${doubling(17)} return a17.length`)).toBeUndefined();
    expect(onHost(`${doubling(16)} return \`\${a16}!\``)).toBeUndefined();
    expect(onHost(`${doubling(16)} return s.repeat(2 ** 16).length`)).toEqual({ value: 2 ** 18 });
    expect(onHost(`${doubling(16)} return s.repeat(2 ** 16 + 1).length`)).toBeUndefined();
    // The result may be as large as the input may be (256 KiB); a15 has 128 Ki characters.
    expect(onHost(`${doubling(15)} return [a15]`)).toEqual({ value: ['text'.repeat(2 ** 15)] });
    expect(onHost(`${doubling(15)} return [a15, a15]`)).toBeUndefined();
    // Time: comparing and searching strings is charged by their characters, 2^22 in all.
    expect(onHost(`${doubling(15)} return a15 < a15 + '!'`)).toEqual({ value: true });
    expect(onHost(`${doubling(15)} return [${Array.from({ length: 12 }, () => "a15 < a15 + '!'").join(', ')}]`)).toBeUndefined();
    expect(onHost(`${doubling(15)} return a15.indexOf('!')`)).toEqual({ value: -1 });
    expect(onHost(`${doubling(15)} return [${Array.from({ length: 40 }, () => "a15.indexOf('!')").join(', ')}]`)).toBeUndefined();
    // Memory: l has 4 elements, so x<k> has 2^(k+2); copying them passes 100,000 at x15.
    const arrays = (last: number) => `const x1 = [...l, ...l]; ${Array.from({ length: last - 1 }, (_, i) => `const x${i + 2} = [...x${i + 1}, ...x${i + 1}];`).join(' ')}`;
    expect(onHost(`${arrays(13)} return x13.length`)).toEqual({ value: 2 ** 15 });
    expect(onHost(`${arrays(15)} return x15.length`)).toBeUndefined();
    // concat is charged for the arrays it spreads, before it builds them: 200 copies of a 1,000-element input
    // would be 200,000 elements.
    const thousand = JSON.stringify([Array.from({ length: 1000 }, () => 0)]);
    const concat = (copies: number) => `return [].concat(${Array.from({ length: copies }, () => 'x').join(', ')}).length`;
    expect(evaluatePureCode(concat(50), ['x'], thousand)).toEqual({ value: 50_000 });
    expect(evaluatePureCode(concat(200), ['x'], thousand)).toBeUndefined();
    // An indented JSON of deep nesting grows with the square of its depth: refused before it is built.
    const deep = JSON.stringify(JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`));
    expect(evaluatePureCode('return JSON.stringify(x).length', ['x'], `[${deep}]`)).toEqual({ value: 4000 });
    expect(evaluatePureCode('return JSON.stringify(x, null, 2).length', ['x'], `[${deep}]`)).toBeUndefined();
    expect(onHost('return JSON.stringify(o, null, 2).length')).toBeDefined();
    expect(onHost(`return 1${' + 1'.repeat(1100)}`)).toBeUndefined();
    expect(evaluatePureCode('return x', ['x'], JSON.stringify(['y'.repeat(300_000)]))).toBeUndefined();
  });

  it('agrees with the sandbox on generated expressions over every kind of input', async () => {
    const random = seeded(20261130);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    const leaves = ['a', 's', 'e', 'o', 'l', 'n', 'b', 'big', 'neg', '0', '1', '-1', '2.5', "'7'", "''", "'x'", 'true', 'null', 'undefined', 'NaN', 'o.x', 'o.list', 'l[1]', 'o.nested'];
    const props = ['x', 'y', 'length', 'list', 'nested', 'z', '0', '1', 'toString', 'constructor', '__proto__', 'missing', 'valueOf'];
    const binaries = ['+', '-', '*', '/', '%', '**', '<', '<=', '>', '>=', '==', '!=', '===', '!==', '&', '|', '^', '<<', '>>', '>>>', '&&', '||', '??'];
    const expression = (depth: number): string => {
      if (depth === 0 || random() < 0.25) return pick(leaves);
      const sub = () => `(${expression(depth - 1)})`;
      switch (Math.floor(random() * 11)) {
        case 0: return `${sub()}.${pick(props)}`;
        case 1: return `${sub()}?.[${random() < 0.5 ? `'${pick(props)}'` : sub()}]`;
        case 2: return `${pick(['-', '+', '!', '~', 'typeof ', 'void '])}${sub()}`;
        case 3: return `${sub()} ${pick(binaries)} ${sub()}`;
        case 4: return `${sub()} ? ${sub()} : ${sub()}`;
        case 5: return `\`<\${${sub()}}|\${${sub()}}>\``;
        case 6: return `{ k: ${sub()}, [${sub()}]: 1, ...${sub()} }`;
        case 7: return `[${sub()}, ...${pick(['l', 'o.list', '[]', 'o.nested.z'])}]`;
        case 8: return `${sub()}[${sub()}]`;
        case 9: return `${pick(['Math.max', 'Math.min', 'Math.round', 'Math.abs', 'String', 'Number', 'Boolean', 'parseInt', 'JSON.stringify', 'Object.keys', 'Array.isArray'])}(${sub()}${random() < 0.5 ? `, ${sub()}` : ''})`;
        default: return `${sub()}.${pick(['toUpperCase', 'slice', 'includes', 'indexOf', 'toFixed', 'join', 'at', 'split', 'concat', 'trim', 'padEnd', 'repeat', 'toString'])}(${random() < 0.5 ? sub() : ''})`;
      }
    };
    let answered = 0;
    const total = 400;
    for (let i = 0; i < total; i++) {
      const code = random() < 0.3 ? `const v = ${expression(2)}; return [v, ${expression(2)}]` : `return ${expression(3)}`;
      if ((await agree(code)) === 'answered') answered++;
    }
    // The generator leans on what declines (objects in arithmetic, inherited properties); most still answer.
    expect(answered).toBeGreaterThan(total * 0.3);
  });
});

describe('pure code in the sandbox', () => {
  it('takes no context for pure code, and a run that has a context keeps using it', async () => {
    const s = new IsolatedVmSandbox({ contextPerRun: true, poolSize: 1 });
    try {
      const before = s.contextStats;
      expect((await s.run({ code: 'return { value: n * 2 }', bindings: { n: 21 }, timeoutMs: 2000 })).value).toEqual({ value: 42 });
      expect(s.contextStats).toMatchObject({ created: before.created, pure: before.pure + 1 });

      // A run whose first block changed a built-in: its later blocks see the change, pure or not.
      const ac = new AbortController();
      const run = (code: string) => s.run({ code, bindings: { o: {} }, timeoutMs: 2000, signal: ac.signal });
      expect((await run('Object.prototype.polluted = 5; return 1')).value).toBe(1);
      expect((await run('return o.polluted')).value).toBe(5);
      ac.abort(new Error('run ended'));
      await s.parked();
      // Another run starts clean, and its pure block is evaluated without a context.
      const pureBefore = s.contextStats.pure;
      expect((await s.run({ code: 'return o.polluted', bindings: { o: {} }, timeoutMs: 2000, signal: new AbortController().signal })).value).toBeNull();
      expect(s.contextStats.pure).toBe(pureBefore + 1);
    } finally {
      s.dispose();
    }
  });
});

/** A small seeded generator (mulberry32), so a failure here reproduces. */
function seeded(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}
