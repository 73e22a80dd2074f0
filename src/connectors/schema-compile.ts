// Compiles a connector operation's JSON Schema for schema-check.ts (docs/architecture.md, Connectors), within
// bounds, since the schema is the tenant's and this runs on the main thread: at most MAX_SUBSCHEMAS sub-schemas
// (each use of a `$ref` counts again, so references that fan out stop here) and COMPILE_BUDGET units (enum
// members, names, pattern text); a `$ref` that is cyclic or not a pointer inside the schema (the OpenAPI parser
// leaves a document's circular ones in place) leaves the schema unchecked. Patterns compile with RE2 (re2js,
// matching linear in the text); one RE2 cannot express, or one whose program would be large (re2js compiles
// at 5 to 15 us an instruction: fifty `a{1,1000}` took about a second), is skipped.
import { RE2JS } from 're2js';

/** Sub-schemas one schema may compile to; past it the schema is not checked here. */
export const MAX_SUBSCHEMAS = 500;
/** Units compiling one schema may spend besides its sub-schemas (enum members, names, pattern text). */
const COMPILE_BUDGET = 100_000;
/** RE2 instructions one pattern may compile to (estimated from its text before compiling). */
const MAX_PATTERN_PROGRAM = 1_000;
/** RE2 instructions all patterns of one schema may compile to. */
const MAX_SCHEMA_PROGRAM = 5_000;
/** Nesting canonical JSON follows (uniqueItems, enum, const); deeper, the walk stops as if out of budget. */
const MAX_CANONICAL_DEPTH = 128;

/** Thrown while compiling a schema that is not checked here. */
const UNCHECKABLE = Symbol('schema not checked here');

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const count = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);

export interface Pattern {
  source: string;
  re: RE2JS;
  size: number;
}

/** A compiled sub-schema: only the keywords it has. `reject` is the schema `false`. */
export interface Node {
  reject?: true;
  types?: string[];
  typeText?: string;
  ref?: Node;
  constKey?: string;
  enumKeys?: Set<string>;
  enumText?: string;
  not?: Node;
  anyOf?: Node[];
  oneOf?: Node[];
  allOf?: Node[];
  if?: Node;
  then?: Node;
  else?: Node;
  limits?: { bad: (v: number) => boolean; message: string }[];
  multipleOf?: number;
  maxLength?: number;
  minLength?: number;
  pattern?: Pattern;
  maxItems?: number;
  minItems?: number;
  uniqueItems?: true;
  tuple?: Node[];
  rest?: Node;
  contains?: Node;
  maxProperties?: number;
  minProperties?: number;
  required?: string[];
  dependencies?: [string, string[] | Node][];
  propertyNames?: Node;
  additional?: Node;
  /** A patternProperties pattern was skipped: which names are additional is unknown. */
  additionalUnknown?: true;
  properties?: Map<string, Node>;
  patternProperties?: [Pattern, Node][];
}

/** Spends units of a budget, throwing `spent` when it runs out. */
export class Meter {
  constructor(private readonly budget: { left: number }, private readonly spent: symbol) {}

  spend(n: number): void {
    this.budget.left -= n;
    if (this.budget.left < 0) throw this.spent;
  }

  /** Canonical JSON text of a value (keys sorted), so equal values give equal texts. */
  key(v: unknown, depth = 0): string {
    this.spend(1);
    if (typeof v === 'string') {
      this.spend(v.length >> 6);
      return JSON.stringify(v);
    }
    if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
    if (depth >= MAX_CANONICAL_DEPTH) throw this.spent;
    if (Array.isArray(v)) return `[${v.map((x) => this.key(x, depth + 1)).join(',')}]`;
    const keys = Object.keys(v);
    this.spend(keys.length * Math.ceil(Math.log2(keys.length + 1)));
    keys.sort();
    return `{${keys.map((k) => `${this.key(k)}:${this.key((v as Json)[k], depth + 1)}`).join(',')}}`;
  }
}

/**
 * An upper bound of the instructions RE2 compiles `source` to, from its text: a quantifier `{n,m}` repeats
 * what it applies to m + 1 times (RE2 expands it), every other character costs at most two.
 */
export function patternProgramEstimate(source: string): number {
  const frames: { total: number; last: number }[] = [{ total: 0, last: 0 }];
  let f = frames[0];
  const atom = (size: number) => {
    f.total += f.last;
    f.last = size;
  };
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      const next = source[i + 1];
      if (next === 'Q') {
        const end = source.indexOf('\\E', i + 2);
        const stop = end < 0 ? source.length : end + 2;
        atom(stop - i);
        i = stop - 1;
      } else if ((next === 'p' || next === 'P') && source[i + 2] === '{') {
        const end = source.indexOf('}', i + 3);
        atom(2);
        i = end < 0 ? source.length : end;
      } else {
        atom(2);
        i++;
      }
    } else if (c === '[') {
      let j = i + 1;
      if (source[j] === '^') j++;
      if (source[j] === ']') j++;
      for (; j < source.length && source[j] !== ']'; j++) {
        if (source[j] === '\\') j++;
        else if (source[j] === '[' && source[j + 1] === ':') {
          const end = source.indexOf(':]', j + 2);
          if (end > 0) j = end + 1;
        }
      }
      atom(2);
      i = j;
    } else if (c === '(') {
      f = { total: 0, last: 0 };
      frames.push(f);
    } else if (c === ')' && frames.length > 1) {
      frames.pop();
      const size = f.total + f.last + 2;
      f = frames[frames.length - 1];
      atom(size);
    } else if (c === '|') {
      f.total += f.last + 2;
      f.last = 0;
    } else if (c === '*' || c === '+' || c === '?') {
      f.last += 2;
    } else if (c === '{') {
      const q = /^\{(\d{1,9})(,(\d{0,9}))?\}/.exec(source.slice(i, i + 24));
      if (q) {
        const bound = q[3] ? Number(q[3]) : Number(q[1]);
        f.last = (f.last + 1) * (bound + 1) + 2;
        i += q[0].length - 1;
      } else atom(2);
    } else atom(2);
  }
  while (frames.length > 1) {
    const size = f.total + f.last + 2;
    frames.pop();
    f = frames[frames.length - 1];
    atom(size);
  }
  return f.total + f.last;
}

/** Compiled patterns by text, shared by every schema (a schema is compiled again in each run). */
const patterns = new Map<string, Pattern | null>();
const MAX_CACHED_PATTERNS = 1_000;

class Compiler {
  private nodes = 0;
  private program = 0;
  private readonly meter: Meter;
  /** `$ref`s being expanded: meeting one again inside itself is a cycle. */
  private readonly expanding: string[] = [];

  constructor(private readonly root: unknown) {
    this.meter = new Meter({ left: COMPILE_BUDGET }, UNCHECKABLE);
  }

  private pattern(source: unknown): Pattern | null {
    if (typeof source !== 'string') return null;
    this.meter.spend(1 + (source.length >> 4));
    const cached = patterns.get(source);
    if (cached !== undefined) {
      if (cached) this.program += cached.size;
      return cached && this.program <= MAX_SCHEMA_PROGRAM ? cached : null;
    }
    const estimate = patternProgramEstimate(source);
    if (estimate > MAX_PATTERN_PROGRAM || this.program + estimate > MAX_SCHEMA_PROGRAM) return null;
    let compiled: Pattern | null;
    try {
      const re = RE2JS.compile(source);
      compiled = { source, re, size: re.programSize() };
    } catch {
      // Lookaround, backreferences and other syntax RE2 refuses: left to the remote API.
      compiled = null;
    }
    if (patterns.size >= MAX_CACHED_PATTERNS) patterns.clear();
    patterns.set(source, compiled);
    if (compiled) this.program += compiled.size;
    return compiled;
  }

  private resolve(ref: string): unknown {
    if (ref === '#') return this.root;
    if (!ref.startsWith('#/')) throw UNCHECKABLE;
    let v: unknown = this.root;
    for (const raw of ref.slice(2).split('/')) {
      this.meter.spend(1);
      let key: string;
      try {
        key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      } catch {
        throw UNCHECKABLE;
      }
      if (Array.isArray(v) && /^\d+$/.test(key)) v = v[Number(key)];
      else if (isObject(v) && Object.hasOwn(v, key)) v = v[key];
      else throw UNCHECKABLE;
    }
    return v;
  }

  private list(v: unknown): Node[] | undefined {
    return Array.isArray(v) && v.length > 0 ? v.map((s) => this.node(s)) : undefined;
  }

  node(s: unknown): Node {
    if (++this.nodes > MAX_SUBSCHEMAS) throw UNCHECKABLE;
    if (s === true) return {};
    if (s === false) return { reject: true };
    if (!isObject(s)) return {};
    const n: Node = {};
    if (typeof s.$ref === 'string') {
      if (this.expanding.includes(s.$ref)) throw UNCHECKABLE;
      this.expanding.push(s.$ref);
      n.ref = this.node(this.resolve(s.$ref));
      this.expanding.pop();
    } else if (s.$ref !== undefined) throw UNCHECKABLE;
    const type = typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type.filter((t): t is string => typeof t === 'string') : [];
    if (type.length > 0) {
      n.typeText = type.join(',');
      // OpenAPI 3.0's nullable, as ajv reads it: null is one more type.
      n.types = s.nullable === true && !type.includes('null') ? [...type, 'null'] : type;
    }
    if (Object.hasOwn(s, 'const')) n.constKey = this.meter.key(s.const);
    if (Array.isArray(s.enum)) {
      n.enumKeys = new Set(s.enum.map((v) => this.meter.key(v)));
      const text = JSON.stringify(s.enum);
      n.enumText = text.length > 500 ? `${text.slice(0, 500)}…` : text;
    }
    if (s.not !== undefined) n.not = this.node(s.not);
    n.anyOf = this.list(s.anyOf);
    n.oneOf = this.list(s.oneOf);
    n.allOf = this.list(s.allOf);
    if (s.if !== undefined) {
      n.if = this.node(s.if);
      if (s.then !== undefined) n.then = this.node(s.then);
      if (s.else !== undefined) n.else = this.node(s.else);
    }
    this.numbers(s, n);
    n.maxLength = count(s.maxLength);
    n.minLength = count(s.minLength);
    n.pattern = this.pattern(s.pattern) ?? undefined;
    this.arrays(s, n);
    this.objects(s, n);
    return n;
  }

  private numbers(s: Json, n: Node): void {
    const limits: NonNullable<Node['limits']> = [];
    const max = num(s.maximum);
    const min = num(s.minimum);
    // OpenAPI 3.0 writes exclusive bounds as booleans beside maximum / minimum.
    const exMax = s.exclusiveMaximum === true ? max : num(s.exclusiveMaximum);
    const exMin = s.exclusiveMinimum === true ? min : num(s.exclusiveMinimum);
    if (max !== undefined && s.exclusiveMaximum !== true) limits.push({ bad: (v) => v > max, message: `must be <= ${max}` });
    if (min !== undefined && s.exclusiveMinimum !== true) limits.push({ bad: (v) => v < min, message: `must be >= ${min}` });
    if (exMax !== undefined) limits.push({ bad: (v) => v >= exMax, message: `must be < ${exMax}` });
    if (exMin !== undefined) limits.push({ bad: (v) => v <= exMin, message: `must be > ${exMin}` });
    if (limits.length > 0) n.limits = limits;
    const multipleOf = num(s.multipleOf);
    if (multipleOf !== undefined && multipleOf > 0) n.multipleOf = multipleOf;
  }

  private arrays(s: Json, n: Node): void {
    n.maxItems = count(s.maxItems);
    n.minItems = count(s.minItems);
    if (s.uniqueItems === true) n.uniqueItems = true;
    // 2020-12 (prefixItems, then items for the rest) or draft 7 (items as a list, then additionalItems).
    if (Array.isArray(s.prefixItems)) {
      n.tuple = s.prefixItems.map((x) => this.node(x));
      if (s.items !== undefined) n.rest = this.node(s.items);
    } else if (Array.isArray(s.items)) {
      n.tuple = s.items.map((x) => this.node(x));
      if (s.additionalItems !== undefined) n.rest = this.node(s.additionalItems);
    } else if (s.items !== undefined) n.rest = this.node(s.items);
    if (s.contains !== undefined) n.contains = this.node(s.contains);
  }

  private objects(s: Json, n: Node): void {
    n.maxProperties = count(s.maxProperties);
    n.minProperties = count(s.minProperties);
    if (Array.isArray(s.required)) {
      this.meter.spend(s.required.length);
      n.required = s.required.filter((r): r is string => typeof r === 'string');
    }
    const deps: [string, string[] | Node][] = [];
    for (const source of [s.dependencies, s.dependentRequired, s.dependentSchemas]) {
      if (!isObject(source)) continue;
      for (const [k, v] of Object.entries(source)) {
        this.meter.spend(1);
        deps.push([k, Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : this.node(v)]);
      }
    }
    if (deps.length > 0) n.dependencies = deps;
    if (s.propertyNames !== undefined) n.propertyNames = this.node(s.propertyNames);
    if (isObject(s.properties)) {
      n.properties = new Map();
      for (const [k, v] of Object.entries(s.properties)) n.properties.set(k, this.node(v));
    }
    if (isObject(s.patternProperties)) {
      const list: [Pattern, Node][] = [];
      for (const [source, v] of Object.entries(s.patternProperties)) {
        const p = this.pattern(source);
        if (p) list.push([p, this.node(v)]);
        else n.additionalUnknown = true;
      }
      if (list.length > 0) n.patternProperties = list;
    }
    if (s.additionalProperties !== undefined) n.additional = this.node(s.additionalProperties);
  }
}

const compiledSchemas = new WeakMap<object, Node | null>();

/** The compiled schema, or null when it is not checked here (cyclic or outside `$ref`, too large). */
export function compiledOf(schema: Json): Node | null {
  let node = compiledSchemas.get(schema);
  if (node === undefined) {
    try {
      node = new Compiler(schema).node(schema);
    } catch (err) {
      if (err !== UNCHECKABLE) throw err;
      node = null;
    }
    compiledSchemas.set(schema, node);
  }
  return node;
}
