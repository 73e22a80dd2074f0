// JSON sizes of values a run holds, measured without building their JSON text (the block output cap, the
// outputs a run holds, the stored result: docs/architecture.md, "Where limits are enforced").

/**
 * An output over a limit is measured on to this many times the limit, so the error can give its size; past
 * that it says "more than", and measuring a huge value costs no more than measuring this much.
 */
const EXACT_SIZE_LIMITS = 16;

/**
 * Nesting the databases store and a run's writes serialize safely: PostgreSQL's JSON parser and
 * JSON.stringify both recurse per level (an answer nested 100,000 deep failed the run's final write).
 */
export const MAX_OUTPUT_DEPTH = 1000;

/** Why a value cannot be stored as JSON by the databases, when it cannot (see storable-text in db/). */
export type Unstorable = 'nul' | 'surrogate' | 'depth';

/** A value's JSON size as an error message gives it: exact up to EXACT_SIZE_LIMITS times `limit`, "more than" past it. */
export function describedSize(value: unknown, limit: number): { bytes: number; json: boolean; text: string; unstorable?: Unstorable } {
  const ceiling = limit * EXACT_SIZE_LIMITS;
  const size = measureJson(value, ceiling);
  return { ...size, text: size.bytes > ceiling ? `more than ${ceiling} bytes` : `${size.bytes} bytes` };
}

/** What an error says of an unstorable value. */
export function unstorableReason(why: Unstorable): string {
  switch (why) {
    case 'nul': return 'it holds a NUL character (\\u0000), which the database does not store';
    case 'surrogate': return 'it holds an unpaired UTF-16 surrogate (invalid Unicode), which the database does not store';
    case 'depth': return `it is nested more than ${MAX_OUTPUT_DEPTH} levels deep`;
  }
}

/** Thrown inside JsonMeasure once the count passes its bound. */
const PAST_BOUND = Symbol('past bound');
/** A member JSON leaves out (undefined, a function, a symbol); as an array element it is `null`. */
const ABSENT = Symbol('absent');

/**
 * The UTF-8 length of `JSON.stringify(value)`, counted without building the string: nothing is allocated, a
 * value longer than V8's longest string is still measured, and counting stops as soon as it passes
 * `stopAbove` (the result is then a number over it, not the size). `json` is false when stringify would
 * throw (a cycle, counted once; a BigInt, counted as its digits; a throwing toJSON or getter); the bytes
 * are then those counted. undefined measures 0. `unstorable` says why the databases could not store it (a NUL
 * character, an unpaired surrogate, nesting past MAX_OUTPUT_DEPTH), as far as it was measured.
 */
export function measureJson(value: unknown, stopAbove: number): { bytes: number; json: boolean; unstorable?: Unstorable } {
  const m = new JsonMeasure(stopAbove);
  try {
    m.run(value);
  } catch (err) {
    if (err !== PAST_BOUND) m.json = false;
  }
  return { bytes: m.bytes, json: m.json, ...(m.unstorable ? { unstorable: m.unstorable } : {}) };
}

/** Characters JSON escapes or the databases refuse: control characters, quote, backslash and surrogates. */
// eslint-disable-next-line no-control-regex
const SPECIAL = /[\u0000-\u001f"\\\ud800-\udfff]/g;
/** Strings at least this long are measured natively (byte length, then their special characters only). */
const LONG_STRING = 256;

interface MeasureFrame {
  node: object;
  /** null for an array. */
  keys: string[] | null;
  next: number;
  /** Members written so far (an object's commas). */
  written: number;
}

class JsonMeasure {
  bytes = 0;
  json = true;
  unstorable?: Unstorable;
  /** Objects and arrays being measured (the path from the top): meeting one again is a cycle. */
  private readonly open = new Set<object>();
  /** An explicit stack rather than recursion: a deeply nested value cannot overflow the call stack. */
  private readonly stack: MeasureFrame[] = [];

  constructor(private readonly stopAbove: number) {}

  run(value: unknown): void {
    const top = this.resolve(value, '');
    if (top !== ABSENT) this.emit(top);
    while (this.stack.length > 0) {
      const f = this.stack[this.stack.length - 1];
      const node = f.node as Record<string, unknown>;
      if (f.keys === null) {
        const length = (f.node as unknown[]).length;
        if (f.next >= length) {
          this.close(f);
          continue;
        }
        const i = f.next++;
        const v = this.resolve(node[i], String(i));
        if (v === ABSENT) this.add(4);
        else this.emit(v);
      } else {
        if (f.next >= f.keys.length) {
          this.close(f);
          continue;
        }
        const key = f.keys[f.next++];
        const v = this.resolve(node[key], key);
        if (v === ABSENT) continue;
        this.add((f.written++ > 0 ? 1 : 0) + 1);
        this.string(key);
        this.emit(v);
      }
    }
  }

  private add(n: number): void {
    this.bytes += n;
    if (this.bytes > this.stopAbove) throw PAST_BOUND;
  }

  private close(f: MeasureFrame): void {
    this.stack.pop();
    this.open.delete(f.node);
  }

  /** What stringify writes for `v`: after toJSON and unboxing, or ABSENT. */
  private resolve(input: unknown, key: string): unknown {
    let v = input;
    if ((typeof v === 'object' && v !== null) || typeof v === 'bigint') {
      const toJSON = (v as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') v = (toJSON as (this: unknown, key: string) => unknown).call(v, key);
    }
    if (v instanceof Number) v = Number(v);
    else if (v instanceof String) v = String(v);
    else if (v instanceof Boolean) v = v.valueOf();
    return v === undefined || typeof v === 'function' || typeof v === 'symbol' ? ABSENT : v;
  }

  private emit(v: unknown): void {
    switch (typeof v) {
      case 'string':
        this.string(v);
        return;
      case 'number':
        this.add(Number.isFinite(v) ? String(v).length : 4);
        return;
      case 'boolean':
        this.add(v ? 4 : 5);
        return;
      case 'bigint':
        this.json = false;
        this.add(String(v).length);
        return;
      default:
        break;
    }
    if (v === null || typeof v !== 'object') {
      this.add(4);
      return;
    }
    if (this.open.has(v)) {
      this.json = false;
      return;
    }
    this.open.add(v);
    if (this.stack.length >= MAX_OUTPUT_DEPTH) this.unstorable ??= 'depth';
    if (Array.isArray(v)) {
      // Brackets and commas up front: a huge sparse array passes the bound at once.
      this.add(2 + Math.max(0, v.length - 1));
      this.stack.push({ node: v, keys: null, next: 0, written: 0 });
    } else {
      this.add(2);
      this.stack.push({ node: v, keys: Object.keys(v), next: 0, written: 0 });
    }
  }

  /** A quoted, escaped string as UTF-8. */
  private string(s: string): void {
    // Every character takes at least one byte: a string too long for what is left stops here.
    if (this.bytes + s.length + 2 > this.stopAbove) this.add(s.length + 2);
    this.add(s.length >= LONG_STRING ? this.longString(s) : this.shortString(s));
  }

  private shortString(s: string): number {
    let n = 2;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) {
        if (c >= 0x20) n += c === 0x22 || c === 0x5c ? 2 : 1;
        else {
          if (c === 0) this.unstorable ??= 'nul';
          n += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
        }
      } else if (c < 0x800) n += 2;
      else if (c >= 0xd800 && c <= 0xdfff) {
        const next = s.charCodeAt(i + 1);
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          n += 4;
          i++;
        } else {
          this.unstorable ??= 'surrogate';
          n += 6; // a lone surrogate is written as \uXXXX
        }
      } else n += 3;
    }
    return n;
  }

  /**
   * The same count for a long string, natively: its UTF-8 length (a paired surrogate 4 bytes, a lone one 3
   * as its replacement character), corrected for the characters JSON escapes, found by one regex scan. A
   * block's 4 MiB output took about 130 ms of the event loop character by character.
   */
  private longString(s: string): number {
    let n = 2 + Buffer.byteLength(s, 'utf8');
    SPECIAL.lastIndex = 0;
    for (let m = SPECIAL.exec(s); m !== null; m = SPECIAL.exec(s)) {
      const i = m.index;
      const c = s.charCodeAt(i);
      if (c === 0x22 || c === 0x5c) n += 1;
      else if (c < 0x20) {
        if (c === 0) this.unstorable ??= 'nul';
        n += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 1 : 5;
      } else if (c <= 0xdbff) {
        const next = s.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) SPECIAL.lastIndex = i + 2; // a pair: 4 bytes, as counted
        else {
          this.unstorable ??= 'surrogate';
          n += 3; // \uXXXX (6) where the byte length counted 3
        }
      } else {
        this.unstorable ??= 'surrogate'; // a low surrogate not after a high one
        n += 3;
      }
    }
    return n;
  }
}
