// Checks a connector's parameter or body value against the operation's JSON Schema (docs/architecture.md,
// Connectors). The schema is the tenant's and the check runs on the main thread, inside a run, so every step is
// bounded instead of trusting a general validator: ajv compiled a schema of 2,000 properties for 3.6 s (then
// overflowed the stack) and compared 15,000 `uniqueItems` objects pairwise for 7 s. Here the schema compiles
// within bounds (schema-compile.ts), and checking spends units of a budget shared by one request's checks (a
// value visited, a keyword applied, a key hashed, a slice of text matched); past it the rest is sent unchecked:
// the remote API is the real validator, this only names mistakes early. `uniqueItems`, `enum` and `const`
// compare canonical JSON texts (a Set), linear in the value. Messages are ajv's for the keywords both know, so a
// run's error reads as it did.
import { compiledOf, Meter, type Node, type Pattern } from './schema-compile.js';

/** Units one request's checks may spend: at most about 20 to 25 ms of checking on the 2-core reference machine. */
export const CHECK_BUDGET = 60_000;
/** Characters x instructions per unit when matching: re2js took up to about 30 ns for each. */
const REGEX_UNIT = 32;

export interface SchemaError {
  /** JSON Pointer of the value in error ('' for the value itself). */
  instancePath: string;
  message: string;
}

export type CheckResult = { valid: true; complete: boolean } | { valid: false; error: SchemaError };

/** Units left for one request's checks; share one between all of its parameters and its body. */
export class CheckBudget {
  constructor(public left: number = CHECK_BUDGET) {}
}

/** Thrown inside a walk when its budget is spent; never leaves this module. */
const SPENT = Symbol('budget spent');

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

const pointerPart = (key: string | number) => `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function hasType(types: string[], v: unknown): boolean {
  const t = typeOf(v);
  for (const want of types) {
    if (want === t) return true;
    if (want === 'integer' && typeof v === 'number' && Number.isInteger(v)) return true;
    if (want === 'number' && typeof v === 'number' && Number.isFinite(v)) return true;
  }
  return false;
}

/** Unicode code points in `s` (ajv's string length), `s.length` at most. */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

class Checker {
  constructor(private readonly meter: Meter) {}

  private test(p: Pattern, text: string): boolean {
    this.meter.spend(1 + Math.floor((text.length * p.size) / REGEX_UNIT));
    return p.re.test(text);
  }

  private length(s: string): number {
    this.meter.spend(s.length >> 6);
    return codePoints(s);
  }

  check(n: Node, v: unknown, at: string): SchemaError | null {
    this.meter.spend(1);
    const fail = (message: string, path = at): SchemaError => ({ instancePath: path, message });
    if (n.reject) return fail('boolean schema is false');
    if (n.ref) {
      const e = this.check(n.ref, v, at);
      if (e) return e;
    }
    if (n.types && !hasType(n.types, v)) return fail(`must be ${n.typeText}`);
    if (n.constKey !== undefined && this.meter.key(v) !== n.constKey) return fail('must be equal to constant');
    if (n.enumKeys && !n.enumKeys.has(this.meter.key(v))) return fail(`must be one of ${n.enumText}`);
    const e = this.applicators(n, v, at)
      ?? (typeof v === 'number' ? this.number(n, v, at) : null)
      ?? (typeof v === 'string' ? this.string(n, v, at) : null)
      ?? (Array.isArray(v) ? this.array(n, v, at) : null)
      ?? (isObject(v) ? this.object(n, v, at) : null);
    return e;
  }

  private passes(n: Node, v: unknown, at: string): boolean {
    return this.check(n, v, at) === null;
  }

  private applicators(n: Node, v: unknown, at: string): SchemaError | null {
    if (n.not && this.passes(n.not, v, at)) return { instancePath: at, message: 'must NOT be valid' };
    if (n.anyOf && !n.anyOf.some((s) => this.passes(s, v, at))) return { instancePath: at, message: 'must match a schema in anyOf' };
    if (n.oneOf) {
      let matched = 0;
      for (const s of n.oneOf) if (this.passes(s, v, at) && ++matched > 1) break;
      if (matched !== 1) return { instancePath: at, message: 'must match exactly one schema in oneOf' };
    }
    if (n.allOf) {
      for (const s of n.allOf) {
        const e = this.check(s, v, at);
        if (e) return e;
      }
    }
    if (n.if) {
      const branch = this.passes(n.if, v, at) ? n.then : n.else;
      if (branch && !this.passes(branch, v, at)) return { instancePath: at, message: `must match "${branch === n.then ? 'then' : 'else'}" schema` };
    }
    return null;
  }

  private number(n: Node, v: number, at: string): SchemaError | null {
    for (const l of n.limits ?? []) if (l.bad(v)) return { instancePath: at, message: l.message };
    if (n.multipleOf !== undefined && !Number.isInteger(v / n.multipleOf)) return { instancePath: at, message: `must be multiple of ${n.multipleOf}` };
    return null;
  }

  private string(n: Node, v: string, at: string): SchemaError | null {
    // The UTF-16 length bounds the code points (from above, and from below by half): count only in between.
    if (n.maxLength !== undefined && v.length > n.maxLength && this.length(v) > n.maxLength) {
      return { instancePath: at, message: `must NOT have more than ${n.maxLength} characters` };
    }
    if (n.minLength !== undefined && v.length < 2 * n.minLength && (v.length < n.minLength || this.length(v) < n.minLength)) {
      return { instancePath: at, message: `must NOT have fewer than ${n.minLength} characters` };
    }
    if (n.pattern && !this.test(n.pattern, v)) return { instancePath: at, message: `must match pattern "${n.pattern.source}"` };
    return null;
  }

  private array(n: Node, v: unknown[], at: string): SchemaError | null {
    if (n.maxItems !== undefined && v.length > n.maxItems) return { instancePath: at, message: `must NOT have more than ${n.maxItems} items` };
    if (n.minItems !== undefined && v.length < n.minItems) return { instancePath: at, message: `must NOT have fewer than ${n.minItems} items` };
    if (n.uniqueItems) {
      // One canonical text per item into a map: linear, where comparing every pair is quadratic.
      const seen = new Map<string, number>();
      for (let i = v.length - 1; i >= 0; i--) {
        const k = this.meter.key(v[i]);
        const j = seen.get(k);
        if (j !== undefined) return { instancePath: at, message: `must NOT have duplicate items (items ## ${i} and ${j} are identical)` };
        seen.set(k, i);
      }
    }
    const tuple = n.tuple ?? [];
    if (n.rest?.reject && v.length > tuple.length) return { instancePath: at, message: `must NOT have more than ${tuple.length} items` };
    for (let i = 0; i < v.length; i++) {
      const s = i < tuple.length ? tuple[i] : n.rest;
      if (!s) break;
      const e = this.check(s, v[i], at + pointerPart(i));
      if (e) return e;
    }
    if (n.contains) {
      const contains = n.contains;
      if (!v.some((x, i) => this.passes(contains, x, at + pointerPart(i)))) return { instancePath: at, message: 'must contain at least 1 valid item(s)' };
    }
    return null;
  }

  private object(n: Node, v: Json, at: string): SchemaError | null {
    const keys = n.maxProperties !== undefined || n.minProperties !== undefined || n.propertyNames || n.additional || n.patternProperties ? Object.keys(v) : [];
    this.meter.spend(keys.length >> 4);
    if (n.maxProperties !== undefined && keys.length > n.maxProperties) return { instancePath: at, message: `must NOT have more than ${n.maxProperties} properties` };
    if (n.minProperties !== undefined && keys.length < n.minProperties) return { instancePath: at, message: `must NOT have fewer than ${n.minProperties} properties` };
    for (const r of n.required ?? []) {
      this.meter.spend(1);
      if (!Object.hasOwn(v, r)) return { instancePath: at, message: `must have required property '${r}'` };
    }
    for (const [name, dep] of n.dependencies ?? []) {
      this.meter.spend(1);
      if (!Object.hasOwn(v, name)) continue;
      if (Array.isArray(dep)) {
        const missing = dep.filter((d) => !Object.hasOwn(v, d));
        this.meter.spend(dep.length);
        if (missing.length > 0) return { instancePath: at, message: `must have property ${missing[0]} when property ${name} is present` };
      } else {
        const e = this.check(dep, v, at);
        if (e) return e;
      }
    }
    if (n.propertyNames) {
      for (const k of keys) if (!this.passes(n.propertyNames, k, at)) return { instancePath: at, message: 'property name must be valid' };
    }
    if (n.additional && !n.additionalUnknown) {
      for (const k of keys) {
        this.meter.spend(1);
        if (n.properties?.has(k) || n.patternProperties?.some(([p]) => this.test(p, k))) continue;
        if (n.additional.reject) return { instancePath: at, message: 'must NOT have additional properties' };
        const e = this.check(n.additional, v[k], at + pointerPart(k));
        if (e) return e;
      }
    }
    for (const [k, s] of n.properties ?? []) {
      this.meter.spend(1);
      if (!Object.hasOwn(v, k)) continue;
      const e = this.check(s, v[k], at + pointerPart(k));
      if (e) return e;
    }
    for (const [p, s] of n.patternProperties ?? []) {
      for (const k of keys) {
        if (!this.test(p, k)) continue;
        const e = this.check(s, v[k], at + pointerPart(k));
        if (e) return e;
      }
    }
    return null;
  }
}

/**
 * Checks `value` against `schema`, spending from `budget`. Valid and complete: it matched (patterns skipped
 * apart); valid and not complete: the schema is not checked here, or the budget ran out before the end (sent
 * as is); invalid: the first mistake found, with where it is.
 */
export function checkAgainst(schema: Json, value: unknown, budget: CheckBudget): CheckResult {
  const node = compiledOf(schema);
  if (node === null || budget.left <= 0) return { valid: true, complete: false };
  try {
    const error = new Checker(new Meter(budget, SPENT)).check(node, value, '');
    return error ? { valid: false, error } : { valid: true, complete: true };
  } catch (err) {
    if (err !== SPENT) throw err;
    return { valid: true, complete: false };
  }
}
