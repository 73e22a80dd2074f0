// What pure code may use of the JavaScript built-ins and of JSON values (pure-code.ts; docs/architecture.md,
// "Pure code"): the properties it may read, the functions it may call, and the meter that bounds a call. A built-in is here when its result depends only on its arguments and it calls no
// code of the caller's: `Math`, `JSON`, number conversions, and string, number and array methods that take no
// callback. Arguments must be primitives (JSON data where a function reads data, such as `JSON.stringify`), so
// nothing is converted through a prototype's methods. Each function is taken from the realm when this module
// loads, so a later change to the host's built-ins cannot reach these calls. Each call is charged before it runs:
// its time by the characters and elements it goes through, its memory by what it copies.

/** Thrown to hand the call to the sandbox; one instance, since it carries nothing. */
class Decline extends Error {}
export const DECLINE = new Decline('outside the pure subset');

/** A string built longer than this declines: as long as the inputs' JSON may be (pure-code.ts). */
export const MAX_STRING_CHARS = 256 * 1024;
/** Elements and properties copied by literals, spreads and built-ins in one call: its memory. */
const MAX_COPIES = 100_000;
/** Characters and elements gone through in one call (comparisons, searches, conversions): its time. */
const MAX_WORK = 1 << 22;

/** What one evaluation has spent. */
export class Meter {
  private work = 0;
  private copies = 0;

  /** Time: characters and elements an operation goes through. */
  charge(units: number): void {
    this.work += units;
    if (this.work > MAX_WORK) throw DECLINE;
  }

  /** Memory: elements and properties an operation copies into new arrays and objects. */
  copy(count: number): void {
    this.copies += count;
    if (this.copies > MAX_COPIES) throw DECLINE;
  }
}

/** A primitive operand; an object would be converted through its prototype's methods. */
export function primitive(v: unknown): unknown {
  if (typeof v === 'object' && v !== null) throw DECLINE;
  return v;
}

export function capped(s: string): string {
  if (s.length > MAX_STRING_CHARS) throw DECLINE;
  return s;
}

/** The characters a value's use costs: a string's length, 1 for anything else. */
export function size(v: unknown): number {
  return typeof v === 'string' ? v.length + 1 : 1;
}

/** A built-in as pure code calls it: on `self` (undefined for a function that is not a method). */
export type Builtin = (m: Meter, self: unknown, args: unknown[]) => unknown;

type Native = (...args: unknown[]) => unknown;

/** Primitive arguments, charged by their size. */
function primitives(m: Meter, args: readonly unknown[]): void {
  for (const a of args) m.charge(size(primitive(a)));
}

/** The built-in's result, charged and capped by its kind. */
function counted(m: Meter, v: unknown): unknown {
  if (typeof v === 'string') {
    m.charge(v.length);
    return capped(v);
  }
  if (Array.isArray(v)) m.copy(v.length);
  return v;
}

/** A function of primitives (`Math.max`, `parseInt`, ...). */
function ofPrimitives(fn: Native): Builtin {
  return (m, _self, args) => {
    primitives(m, args);
    return counted(m, Reflect.apply(fn, undefined, args));
  };
}

/** A method of a primitive receiver with primitive arguments; `check` refuses what would cost too much. */
function method(fn: Native, check?: (self: string, args: readonly unknown[]) => boolean): Builtin {
  return (m, self, args) => {
    primitives(m, args);
    m.charge(size(self));
    if (check && !check(self as string, args)) throw DECLINE;
    return counted(m, Reflect.apply(fn, self, args));
  };
}

const S = String.prototype as unknown as Record<string, Native>;
const N = Number.prototype as unknown as Record<string, Native>;
const A = Array.prototype as unknown as Record<string, Native>;

const fitsString = (length: number) => Number.isFinite(length) && length <= MAX_STRING_CHARS;

/** String methods, by name. */
export const STRING_METHODS = new Map<string, Builtin>([
  ...['toUpperCase', 'toLowerCase', 'trim', 'trimStart', 'trimEnd', 'slice', 'substring', 'startsWith', 'endsWith', 'includes',
    'indexOf', 'lastIndexOf', 'charAt', 'charCodeAt', 'codePointAt', 'at', 'concat', 'toString']
    .map((name): [string, Builtin] => [name, method(S[name])]),
  // What these would build is known before they run: refused past the string cap instead of built.
  ['repeat', method(S.repeat, (self, [count]) => fitsString(self.length * Math.max(0, Math.trunc(Number(count)))))],
  ['padStart', method(S.padStart, (_self, [length]) => fitsString(Number(length)))],
  ['padEnd', method(S.padEnd, (_self, [length]) => fitsString(Number(length)))],
  // Each character could become an element.
  ['split', method(S.split, (self) => self.length < MAX_COPIES)],
  // A string pattern and replacement: at most one replacement per position. `$` patterns can insert far more.
  ...['replace', 'replaceAll'].map((name): [string, Builtin] => [name, method(S[name], (self, [, replacement]) => {
    const r = String(replacement);
    return !r.includes('$') && fitsString(self.length + (self.length + 1) * r.length);
  })]),
]);

/** Number methods, by name (their results are a few dozen characters at most). */
export const NUMBER_METHODS = new Map<string, Builtin>(
  ['toFixed', 'toPrecision', 'toExponential', 'toString'].map((name): [string, Builtin] => [name, method(N[name])]),
);

/** Array methods that take no callback, by name. */
export const ARRAY_METHODS = new Map<string, Builtin>([
  // Strict comparison: an element or the searched value is never converted. Comparing strings goes through them.
  ...['includes', 'indexOf', 'lastIndexOf'].map((name): [string, Builtin] => [name, (m, self, args) => {
    const list = self as unknown[];
    primitive(args[1]);
    m.charge(list.length * size(args[0]));
    return Reflect.apply(A[name], list, args);
  }]),
  ['join', (m, self, args) => {
    const list = self as unknown[];
    primitives(m, args);
    for (const item of list) m.charge(size(primitive(item)) + size(args[0]));
    return counted(m, Reflect.apply(A.join, list, args));
  }],
  ...['slice', 'at'].map((name): [string, Builtin] => [name, (m, self, args) => {
    primitives(m, args);
    return counted(m, Reflect.apply(A[name], self, args));
  }]),
  // Charged for the whole result before it is built: arguments that are arrays are spread into it.
  ['concat', (m, self, args) => {
    m.copy(args.reduce<number>((n, a) => n + (Array.isArray(a) ? a.length : 1), (self as unknown[]).length));
    return counted(m, Reflect.apply(A.concat, self, args));
  }],
]);

/** `self` as JSON data: a plain object or an array (what inputs and literals make). */
function jsonObject(v: unknown): object {
  if (typeof v !== 'object' || v === null || (!Array.isArray(v) && Object.getPrototypeOf(v) !== Object.prototype)) throw DECLINE;
  return v;
}

/**
 * The size of JSON data (its strings' characters and its values; shared parts counted each time), walked until it
 * passes `limit`: the result is then past it too, and the rest is not walked.
 */
export function dataSize(value: unknown, limit: number): number {
  let units = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && units <= limit) {
    const v = stack.pop();
    units += size(v);
    if (Array.isArray(v)) for (const item of v) stack.push(item);
    else if (typeof v === 'object' && v !== null) for (const k of Object.keys(v)) stack.push(k, (v as Record<string, unknown>)[k]);
  }
  return units;
}

/** How deeply JSON data nests (walked after `dataSize` bounded it). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    deepest = Math.max(deepest, depth);
    if (typeof v === 'object' && v !== null) for (const item of Object.values(v)) stack.push([item, depth + 1]);
  }
  return deepest;
}

const math = Math as unknown as Record<string, Native>;
const MATH_FUNCTIONS = ['abs', 'ceil', 'floor', 'round', 'trunc', 'sign', 'sqrt', 'cbrt', 'min', 'max', 'pow', 'exp', 'expm1', 'log',
  'log1p', 'log2', 'log10', 'hypot', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2', 'sinh', 'cosh', 'tanh', 'fround', 'clz32', 'imul', 'random'];
const { stringify, parse } = JSON;
const { keys, values, entries } = Object;
const { isArray } = Array;

/** Functions reached through a global namespace (`Math.max`), by namespace and name. */
export const NAMESPACE_FUNCTIONS = new Map<string, Map<string, Builtin>>([
  ['Math', new Map(MATH_FUNCTIONS.map((name): [string, Builtin] => [name, ofPrimitives(math[name])]))],
  ['JSON', new Map<string, Builtin>([
    // The data and, optionally, no replacer and a primitive indent: no function of the caller's to call.
    ['stringify', (m, _self, args) => {
      if (args.length > 3 || (args[1] !== undefined && args[1] !== null)) throw DECLINE;
      primitive(args[2]);
      const units = dataSize(args[0], MAX_WORK + 1);
      m.charge(units);
      // An indent repeats once per level on every line: the output can grow with the square of the nesting.
      if (args[2] !== undefined && args[2] !== null && units * (depthOf(args[0]) * 10 + 1) > MAX_STRING_CHARS) throw DECLINE;
      return counted(m, stringify(args[0], null, args[2] as number | string | undefined));
    }],
    ['parse', (m, _self, args) => {
      if (args.length !== 1 || typeof args[0] !== 'string' || args[0].length > MAX_STRING_CHARS) throw DECLINE;
      m.charge(args[0].length);
      m.copy(args[0].length >> 3);
      return parse(args[0]) as unknown;
    }],
  ])],
  ['Number', new Map(['isInteger', 'isFinite', 'isNaN', 'isSafeInteger', 'parseFloat', 'parseInt']
    .map((name): [string, Builtin] => [name, ofPrimitives((Number as unknown as Record<string, Native>)[name])]))],
  ['Array', new Map<string, Builtin>([['isArray', (_m, _self, args) => isArray(args[0])]])],
  ['Object', new Map<string, Builtin>([keys, values, entries].map((fn): [string, Builtin] => [fn.name, (m, _self, args) => {
    const data = jsonObject(args[0]);
    m.copy(keys(data).length);
    return Reflect.apply(fn, undefined, [data]) as unknown;
  }]))],
]);

/** Constants reached through a global namespace (`Math.PI`). */
export const NAMESPACE_CONSTANTS = new Map<string, Map<string, number>>([
  ['Math', new Map(['E', 'LN10', 'LN2', 'LOG10E', 'LOG2E', 'PI', 'SQRT1_2', 'SQRT2'].map((k): [string, number] => [k, (Math as unknown as Record<string, number>)[k]]))],
  ['Number', new Map(['EPSILON', 'MAX_SAFE_INTEGER', 'MAX_VALUE', 'MIN_SAFE_INTEGER', 'MIN_VALUE', 'NaN', 'NEGATIVE_INFINITY', 'POSITIVE_INFINITY']
    .map((k): [string, number] => [k, (Number as unknown as Record<string, number>)[k]]))],
]);

/** Global functions, by name. `Boolean` converts nothing, so it takes any value. */
export const GLOBAL_FUNCTIONS = new Map<string, Builtin>([
  ...([['Number', Number], ['String', String], ['parseInt', parseInt], ['parseFloat', parseFloat], ['isNaN', isNaN], ['isFinite', isFinite]] as const)
    .map(([name, fn]): [string, Builtin] => [name, ofPrimitives(fn as Native)]),
  ['Boolean', (_m, _self, args) => Boolean(args[0])],
]);

/** A canonical array index ("0", "1", ...; not "01" or "-0"). */
function isArrayIndex(key: string): boolean {
  const i = Number(key);
  return Number.isInteger(i) && i >= 0 && i < 4294967295 && String(i) === key;
}

/** `base[key]` for JSON data and primitives: own properties only; whatever a prototype would supply declines. */
export function readProperty(base: unknown, key: string): unknown {
  if (Array.isArray(base)) {
    if (key === 'length') return base.length;
    if (isArrayIndex(key) && Number(key) < base.length) return base[Number(key)] as unknown;
    return inherited(Array.prototype, key);
  }
  switch (typeof base) {
    case 'object':
      if (base === null || Object.getPrototypeOf(base) !== Object.prototype) throw DECLINE;
      return Object.hasOwn(base, key) ? (base as Record<string, unknown>)[key] : inherited(Object.prototype, key);
    case 'string':
      if (key === 'length') return base.length;
      if (isArrayIndex(key) && Number(key) < base.length) return base[Number(key)];
      return inherited(String.prototype, key);
    case 'number':
      return inherited(Number.prototype, key);
    case 'boolean':
      return inherited(Boolean.prototype, key);
    default:
      throw DECLINE; // undefined: a TypeError
  }
}

function inherited(prototype: object, key: string): undefined {
  if (key in prototype) throw DECLINE;
  return undefined;
}
