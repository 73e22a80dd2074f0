// Masking of secret values in what a run reports (trace, step records, output, errors, variables,
// pause responses). A value is replaced by `***` wherever it appears whole, also in its JSON-escaped,
// URL-encoded (as a component, as a form field, and as each part of a URL encodes it: user, password, path,
// query, fragment), lower-case and upper-case spellings (a URL's host is lower-cased by the parser, and an
// error naming it would otherwise carry the value), and so is any stretch of a text that shares at least
// MIN_FRAGMENT consecutive characters with a spelling (user code that slices or re-joins part of a secret
// still leaks a part long enough to matter; shorter overlaps are ordinary text). Code that transforms a
// value otherwise (reverses, encodes it) can still reveal it: masking keeps values out of reports by
// accident, it does not keep them from the workspace's own editors.
//
// Cost: a run's result holds megabytes of block outputs, often the same string many times (each
// block's output, the outputs that pass it on, the final output), and is masked on the main thread.
// So a text is scanned for fragments by sampling: every window of MIN_FRAGMENT characters contains a
// GRAM-character piece starting at a multiple of SAMPLE_STEP, so only those pieces are looked up (in a
// bit table of every GRAM-character piece of every spelling) and the windows around a piece found
// there are checked exactly. One pass over a value masks each distinct long string once, and
// `valueYielding` lets the event loop run while a large value is masked.
import type { ClockPort } from './ports.js';

export const MASK = '***';
/** Shortest piece of a secret that is masked on its own. */
export const MIN_FRAGMENT = 8;

/** Length of the pieces the fragment scan samples. */
const GRAM = 3;
/** Distance between samples: every MIN_FRAGMENT-character window holds one sampled piece whole. */
const SAMPLE_STEP = MIN_FRAGMENT - GRAM + 1;
/** Strings at least this long are masked once per pass (shorter ones cost less than the lookup). */
const CACHE_MIN_LENGTH = 1024;
/** How many masked strings one pass keeps per fingerprint (strings that share one are compared whole). */
const CACHE_BUCKET = 4;
/** `valueYielding` scans a long string this many characters at a time (a multiple of SAMPLE_STEP). */
const CHUNK_CHARS = SAMPLE_STEP * 20_000;
/** `valueYielding` lets the event loop run once it has held it this long (as the run loop does). */
const PACE_MS = 10;
/** ... checking the clock after about this much work (characters scanned, plus a little per value). */
const PACE_CHECK_WORK = 1 << 16;

/** The clock `valueYielding` paces itself by: without `yield` it masks in one go. */
export type MaskPacing = Pick<ClockPort, 'now' | 'yield'>;

/**
 * A value as URLs carry it: a component (encodeURIComponent), a form field (URLSearchParams, which the http
 * block and connectors use for query parameters: spaces become `+`), and each part of a URL, whose parser
 * percent-encodes a different set of characters in each (an echoed request URL or a redirect shows those).
 */
function urlSpellings(value: string): string[] {
  const out = [encodeURIComponent(value), new URLSearchParams([['', value]]).toString().slice(1)];
  try {
    const url = new URL('http://h/');
    url.username = value;
    url.password = value;
    url.pathname = `/${value}`;
    url.search = `?${value}`;
    url.hash = `#${value}`;
    out.push(url.username, url.password, url.pathname.slice(1), url.search.slice(1), url.hash.slice(1));
  } catch {
    // A value no URL part takes as it is: the component spellings above stand.
  }
  return out;
}

export class SecretMask {
  /** Whole spellings of every value, longest first. */
  private readonly needles: string[];
  /** Spellings shorter than MIN_FRAGMENT: searched whole (longer ones are covered by their fragments). */
  private readonly shortNeedles: string[];
  /** Every MIN_FRAGMENT-character piece of every spelling at least that long. */
  private readonly fragments = new Set<string>();
  /** Bit table of the GRAM-character pieces of the fragments: a sample not in it rules out SAMPLE_STEP windows. */
  private readonly gramBits: Uint32Array;
  /** Bit table of the fragments' hashes: most windows near a sampled hit are ruled out without a slice. */
  private readonly fragmentBits: Uint32Array;
  private readonly tableMask: number;
  /** Texts shorter than this cannot hold anything to mask. */
  private readonly shortest: number;

  constructor(values: Iterable<string>) {
    const spellings = new Set<string>();
    for (const v of values) {
      if (v.length === 0) continue;
      for (const cased of [v, v.toLowerCase(), v.toUpperCase()]) {
        spellings.add(cased);
        spellings.add(JSON.stringify(cased).slice(1, -1));
        for (const encoded of urlSpellings(cased)) spellings.add(encoded);
      }
    }
    this.needles = [...spellings].sort((a, b) => b.length - a.length);
    this.shortNeedles = this.needles.filter((n) => n.length < MIN_FRAGMENT);
    for (const s of this.needles) {
      for (let i = 0; i + MIN_FRAGMENT <= s.length; i++) this.fragments.add(s.slice(i, i + MIN_FRAGMENT));
    }
    // About 32 bits per entry keeps a random sample's false hits near 1 in 30 per piece.
    let bits = 1024;
    while (bits < this.fragments.size * (MIN_FRAGMENT - GRAM + 1) * 32 && bits < 1 << 24) bits *= 2;
    this.tableMask = bits - 1;
    this.gramBits = new Uint32Array(this.fragments.size > 0 ? bits >>> 5 : 1);
    this.fragmentBits = new Uint32Array(this.fragments.size > 0 ? bits >>> 5 : 1);
    for (const f of this.fragments) {
      for (let i = 0; i + GRAM <= MIN_FRAGMENT; i++) setBit(this.gramBits, gramHash(f, i) & this.tableMask);
      setBit(this.fragmentBits, fragmentHash(f, 0) & this.tableMask);
    }
    this.shortest = Math.min(MIN_FRAGMENT, ...this.needles.map((n) => n.length));
  }

  get empty(): boolean {
    return this.needles.length === 0;
  }

  /** The text with every covered stretch replaced by `***`; the same string when nothing was. */
  text(s: string): string {
    if (this.needles.length === 0 || s.length < this.shortest) return s;
    const ranges = this.shortNeedleRanges(s);
    const fragmentRanges: number[] = [];
    this.scanFragments(s, 0, s.length, fragmentRanges);
    return this.apply(s, ranges, fragmentRanges);
  }

  /** A copy of a JSON-like value with every string (keys included) and number masked. */
  value<T>(v: T): T {
    if (this.needles.length === 0) return v;
    return this.walk(v, new Set(), new PassCache()) as T;
  }

  /**
   * The same as `value`, but lets the event loop run (through `clock.yield`) whenever it has held it
   * for PACE_MS, also in the middle of a long string: a run's whole result can hold many megabytes.
   */
  async valueYielding<T>(v: T, clock: MaskPacing): Promise<T> {
    if (this.needles.length === 0) return v;
    if (clock.yield === undefined) return this.value(v);
    return (await this.walkYielding(v, new Set(), new PassCache(), new Pacer(clock, clock.yield.bind(clock)))) as T;
  }

  private walk(v: unknown, seen: Set<object>, cache: PassCache): unknown {
    if (typeof v === 'string') return this.cachedText(v, cache);
    if (typeof v === 'number' || typeof v === 'bigint') return this.numberLeaf(v);
    if (v === null || typeof v !== 'object' || v instanceof Date) return v;
    if (seen.has(v)) return '[Circular]';
    seen.add(v);
    let out: unknown;
    if (Array.isArray(v)) out = v.map((x) => this.walk(x, seen, cache));
    else {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) o[this.cachedText(k, cache)] = this.walk(x, seen, cache);
      out = o;
    }
    seen.delete(v);
    return out;
  }

  /** `walk` with pauses; only objects and long strings cost a promise, other values are masked inline. */
  private async walkYielding(v: unknown, seen: Set<object>, cache: PassCache, pacer: Pacer): Promise<unknown> {
    if (typeof v === 'string') {
      const key = fingerprint(v);
      const hit = cache.get(key, v);
      if (hit !== undefined) return hit;
      const masked = await this.textYielding(v, pacer);
      cache.set(key, v, masked);
      return masked;
    }
    if (v === null || typeof v !== 'object' || v instanceof Date) return this.walk(v, seen, cache);
    if (seen.has(v)) return '[Circular]';
    seen.add(v);
    let out: unknown;
    if (Array.isArray(v)) {
      const a: unknown[] = [];
      for (const x of v) {
        a.push(needsPromise(x) ? await this.walkYielding(x, seen, cache, pacer) : this.walk(x, seen, cache));
        if (pacer.due(workOf(x))) await pacer.pause();
      }
      out = a;
    } else {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        o[this.cachedText(k, cache)] = needsPromise(x) ? await this.walkYielding(x, seen, cache, pacer) : this.walk(x, seen, cache);
        if (pacer.due(workOf(x))) await pacer.pause();
      }
      out = o;
    }
    seen.delete(v);
    return out;
  }

  private numberLeaf(v: number | bigint): unknown {
    const s = String(v);
    const masked = this.text(s);
    return masked === s ? v : masked;
  }

  private cachedText(s: string, cache: PassCache): string {
    if (s.length < CACHE_MIN_LENGTH) return this.text(s);
    const key = fingerprint(s);
    const hit = cache.get(key, s);
    if (hit !== undefined) return hit;
    const masked = this.text(s);
    cache.set(key, s, masked);
    return masked;
  }

  /** `text`, scanning CHUNK_CHARS at a time and pausing between chunks when due. */
  private async textYielding(s: string, pacer: Pacer): Promise<string> {
    if (s.length < this.shortest) return s;
    const ranges = this.shortNeedleRanges(s);
    const fragmentRanges: number[] = [];
    for (let from = 0; from < s.length; from += CHUNK_CHARS) {
      const to = Math.min(s.length, from + CHUNK_CHARS);
      this.scanFragments(s, from, to, fragmentRanges);
      if (pacer.due(to - from)) await pacer.pause();
    }
    return this.apply(s, ranges, fragmentRanges);
  }

  /** Where the spellings shorter than MIN_FRAGMENT occur, as [start, end) pairs. */
  private shortNeedleRanges(s: string): number[] {
    const ranges: number[] = [];
    for (const needle of this.shortNeedles) {
      for (let at = s.indexOf(needle); at !== -1; at = s.indexOf(needle, at + needle.length)) ranges.push(at, at + needle.length);
    }
    return ranges;
  }

  /**
   * Appends to `ranges` (merged [start, end) pairs, in order) the fragments found in the windows
   * starting in [from, to). Consecutive calls over adjacent spans give the same result as one call
   * when `from` is a multiple of SAMPLE_STEP.
   */
  private scanFragments(s: string, from: number, to: number, ranges: number[]): void {
    if (this.fragments.size === 0) return;
    const windowsEnd = Math.min(to, s.length - MIN_FRAGMENT + 1);
    if (windowsEnd <= from) return;
    const bits = this.gramBits;
    const mask = this.tableMask;
    for (let j = Math.ceil(from / SAMPLE_STEP) * SAMPLE_STEP; j < windowsEnd + SAMPLE_STEP - 1; j += SAMPLE_STEP) {
      const h = gramHash(s, j) & mask;
      if ((bits[h >>> 5] & (1 << (h & 31))) === 0) continue;
      const last = Math.min(j, windowsEnd - 1);
      for (let i = Math.max(from, j - (SAMPLE_STEP - 1)); i <= last; i++) {
        const f = fragmentHash(s, i) & mask;
        if ((this.fragmentBits[f >>> 5] & (1 << (f & 31))) === 0) continue;
        if (!this.fragments.has(s.slice(i, i + MIN_FRAGMENT))) continue;
        const n = ranges.length;
        if (n > 0 && i <= ranges[n - 1]) ranges[n - 1] = i + MIN_FRAGMENT;
        else ranges.push(i, i + MIN_FRAGMENT);
      }
    }
  }

  /** The text with every range (touching or overlapping ones as one) replaced by `***`. */
  private apply(s: string, shortRanges: number[], fragmentRanges: number[]): string {
    let ranges = fragmentRanges;
    if (shortRanges.length > 0) {
      const pairs: [number, number][] = [];
      for (const list of [shortRanges, fragmentRanges]) for (let k = 0; k < list.length; k += 2) pairs.push([list[k], list[k + 1]]);
      pairs.sort((a, b) => a[0] - b[0]);
      ranges = [];
      for (const [start, end] of pairs) {
        const n = ranges.length;
        if (n > 0 && start <= ranges[n - 1]) ranges[n - 1] = Math.max(ranges[n - 1], end);
        else ranges.push(start, end);
      }
    }
    if (ranges.length === 0) return s;
    let out = '';
    let at = 0;
    for (let k = 0; k < ranges.length; k += 2) {
      out += s.slice(at, ranges[k]) + MASK;
      at = ranges[k + 1];
    }
    return out + s.slice(at);
  }
}

export const NO_SECRETS = new SecretMask([]);

/** The long strings one pass has masked, so that equal copies are scanned once. */
class PassCache {
  /**
   * At most CACHE_BUCKET strings per fingerprint, the oldest dropped first. So a lookup compares with a
   * few strings at most (a Map keyed by the strings themselves would not: V8 hashes a long string by its
   * length alone, so equally long outputs would all be compared with each other).
   */
  private readonly buckets = new Map<number, { source: string; masked: string }[]>();

  get(key: number, s: string): string | undefined {
    for (const e of this.buckets.get(key) ?? []) if (e.source === s) return e.masked;
    return undefined;
  }

  set(key: number, s: string, masked: string): void {
    const bucket = this.buckets.get(key);
    if (bucket === undefined) this.buckets.set(key, [{ source: s, masked }]);
    else {
      if (bucket.length >= CACHE_BUCKET) bucket.shift();
      bucket.push({ source: s, masked });
    }
  }
}

/** Tells `valueYielding` when it has held the event loop for PACE_MS. */
class Pacer {
  private work = 0;
  private since: number;

  constructor(private readonly clock: MaskPacing, private readonly yieldNow: () => Promise<void>) {
    this.since = clock.now();
  }

  due(work: number): boolean {
    this.work += work;
    if (this.work < PACE_CHECK_WORK) return false;
    this.work = 0;
    return this.clock.now() - this.since >= PACE_MS;
  }

  async pause(): Promise<void> {
    await this.yieldNow();
    this.since = this.clock.now();
  }
}

/** Whether `walkYielding` may pause inside the value (an object, or a string scanned in chunks). */
function needsPromise(v: unknown): boolean {
  return typeof v === 'string' ? v.length >= CACHE_MIN_LENGTH : v !== null && typeof v === 'object' && !(v instanceof Date);
}

/** What a value counts toward PACE_CHECK_WORK (a long string costs a scan, or a comparison when cached). */
function workOf(v: unknown): number {
  return typeof v === 'string' ? v.length + 16 : 16;
}

/** A hash of the string's length, its first and last characters and some spread over it. */
function fingerprint(s: string): number {
  let h = s.length;
  const ends = Math.min(16, s.length);
  for (let i = 0; i < ends; i++) h = Math.imul(h ^ s.charCodeAt(i) ^ (s.charCodeAt(s.length - 1 - i) << 16), 0x9e3779b1);
  const step = Math.max(1, Math.floor(s.length / 32));
  for (let i = step >> 1; i < s.length; i += step) h = Math.imul(h ^ s.charCodeAt(i), 0x85ebca77);
  return h ^ (h >>> 16);
}

function gramHash(s: string, at: number): number {
  let h = Math.imul(s.charCodeAt(at), 0x9e3779b1) + s.charCodeAt(at + 1);
  h = Math.imul(h, 0x85ebca77) + s.charCodeAt(at + 2);
  h = Math.imul(h ^ (h >>> 15), 0x27d4eb2f);
  return h ^ (h >>> 13);
}

function fragmentHash(s: string, at: number): number {
  let h = 0;
  for (let i = at; i < at + MIN_FRAGMENT; i++) h = Math.imul(h, 0x85ebca77) + s.charCodeAt(i);
  h = Math.imul(h ^ (h >>> 15), 0x9e3779b1);
  return h ^ (h >>> 13);
}

function setBit(bits: Uint32Array, index: number): void {
  bits[index >>> 5] |= 1 << (index & 31);
}
