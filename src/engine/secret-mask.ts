// Masking of secret values in what a run reports (trace, step records, output, errors, variables,
// pause responses). A value is replaced by `***` wherever it appears whole, also in its JSON-escaped
// and URL-encoded spellings, and so is any stretch of a text that shares at least MIN_FRAGMENT
// consecutive characters with a value (user code that slices, reverses or re-joins part of a secret
// still leaks a part long enough to matter; shorter overlaps are ordinary text).

export const MASK = '***';
/** Shortest piece of a secret that is masked on its own. */
export const MIN_FRAGMENT = 8;

export class SecretMask {
  /** Whole spellings of every value, longest first. */
  private readonly needles: string[];
  /** Every MIN_FRAGMENT-character piece of every spelling at least that long. */
  private readonly fragments = new Set<string>();
  /** Texts shorter than this cannot hold anything to mask. */
  private readonly shortest: number;

  constructor(values: Iterable<string>) {
    const spellings = new Set<string>();
    for (const v of values) {
      if (v.length === 0) continue;
      spellings.add(v);
      spellings.add(JSON.stringify(v).slice(1, -1));
      spellings.add(encodeURIComponent(v));
    }
    this.needles = [...spellings].sort((a, b) => b.length - a.length);
    for (const s of this.needles) {
      for (let i = 0; i + MIN_FRAGMENT <= s.length; i++) this.fragments.add(s.slice(i, i + MIN_FRAGMENT));
    }
    this.shortest = Math.min(MIN_FRAGMENT, ...this.needles.map((n) => n.length));
  }

  get empty(): boolean {
    return this.needles.length === 0;
  }

  /** The text with every covered stretch replaced by `***`; the same string when nothing was. */
  text(s: string): string {
    if (this.needles.length === 0 || s.length < this.shortest) return s;
    const marks = new Uint8Array(s.length);
    let any = false;
    for (const needle of this.needles) {
      for (let at = s.indexOf(needle); at !== -1; at = s.indexOf(needle, at + needle.length)) {
        marks.fill(1, at, at + needle.length);
        any = true;
      }
    }
    if (this.fragments.size > 0) {
      for (let i = 0; i + MIN_FRAGMENT <= s.length; i++) {
        if (this.fragments.has(s.slice(i, i + MIN_FRAGMENT))) {
          marks.fill(1, i, i + MIN_FRAGMENT);
          any = true;
        }
      }
    }
    if (!any) return s;
    let out = '';
    for (let i = 0; i < s.length;) {
      if (marks[i] === 1) {
        out += MASK;
        while (i < s.length && marks[i] === 1) i++;
      } else {
        const start = i;
        while (i < s.length && marks[i] !== 1) i++;
        out += s.slice(start, i);
      }
    }
    return out;
  }

  /** A copy of a JSON-like value with every string (keys included) and number masked. */
  value<T>(v: T): T {
    if (this.needles.length === 0) return v;
    return this.walk(v, new Set()) as T;
  }

  private walk(v: unknown, seen: Set<object>): unknown {
    if (typeof v === 'string') return this.text(v);
    if (typeof v === 'number' || typeof v === 'bigint') {
      const s = String(v);
      const masked = this.text(s);
      return masked === s ? v : masked;
    }
    if (v === null || typeof v !== 'object' || v instanceof Date) return v;
    if (seen.has(v)) return '[Circular]';
    seen.add(v);
    let out: unknown;
    if (Array.isArray(v)) out = v.map((x) => this.walk(x, seen));
    else {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) o[this.text(k)] = this.walk(x, seen);
      out = o;
    }
    seen.delete(v);
    return out;
  }
}

export const NO_SECRETS = new SecretMask([]);
