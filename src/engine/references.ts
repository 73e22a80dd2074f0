// References in config values: `<blockName.path[0].field>`, `<start.x>`, `<variable.x>`,
// `<loop.index|currentItem|items>`, `<parallel.*>`, `<containerName.results>` and `{{SECRET}}`.
//
// Heuristic (so `a < b`, `x<3` or `<b>` in HTML are not references): a reference is `<`, a name
// segment starting with a letter or underscore, an optional path, `>`, with no spaces. A name
// without a path counts only when it is a known name; with a path it is always a reference (and
// validation reports it when the name is unknown).

import { measureJson } from './json-size.js';

/** Lower-case, spaces and dots removed. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[\s.]+/g, '');
}

export const RESERVED_HEADS = ['loop', 'parallel', 'variable', 'start', 'webhook', 'schedule'] as const;

/** Heads naming an entry block by its type (`<start.x>`, `<webhook.x>`, `<schedule.x>`). */
export const ENTRY_HEADS: readonly string[] = ['start', 'webhook', 'schedule'];

export interface RefToken {
  kind: 'ref';
  raw: string;
  head: string;
  path: (string | number)[];
  /** True when written with a path (`<a.b>`), false for `<a>`. */
  hasPath: boolean;
}

export interface SecretToken {
  kind: 'secret';
  raw: string;
  name: string;
}

export type Token = RefToken | SecretToken;

export type TemplatePart = string | Token;

const NAME = '[\\p{L}_][\\p{L}\\p{N}_\\-]*';
const SEG = '[\\p{L}\\p{N}_\\-$]+';
const REF_SOURCE = `<(${NAME})((?:\\.${SEG}|\\[\\d+\\])*)>`;
// A secret's name follows the secrets' naming rule (upper case), so `{{ name }}` in a prompt or a
// template stays text.
const SECRET_SOURCE = '\\{\\{\\s*([A-Z][A-Z0-9_]{0,63})\\s*\\}\\}';
const TOKEN_RE = new RegExp(`${REF_SOURCE}|${SECRET_SOURCE}`, 'gu');
const PATH_RE = new RegExp(`\\.(${SEG})|\\[(\\d+)\\]`, 'gu');

export type HeadPredicate = (head: string) => boolean;

function parsePath(source: string): (string | number)[] {
  const path: (string | number)[] = [];
  PATH_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = PATH_RE.exec(source)) !== null) {
    if (m[1] !== undefined) path.push(/^\d+$/.test(m[1]) ? Number(m[1]) : m[1]);
    else path.push(Number(m[2]));
  }
  return path;
}

/** The token a regular-expression match stands for; null for a path-less `<name>` that is not a known name. */
function tokenOf(m: RegExpExecArray, isKnownHead: HeadPredicate): Token | null {
  if (m[1] === undefined) return { kind: 'secret', raw: m[0], name: m[3] };
  const head = normalizeName(m[1]);
  const pathSource = m[2] ?? '';
  const hasPath = pathSource.length > 0;
  if (!hasPath && !isKnownHead(head)) return null;
  return { kind: 'ref', raw: m[0], head, path: parsePath(pathSource), hasPath };
}

/** Finds the tokens of a string. `isKnownHead` decides whether a path-less `<name>` is a reference. */
export function scanTokens(text: string, isKnownHead: HeadPredicate): { index: number; token: Token }[] {
  const found: { index: number; token: Token }[] = [];
  if (text.indexOf('<') === -1 && text.indexOf('{{') === -1) return found;
  const re = new RegExp(TOKEN_RE.source, 'gu');
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const token = tokenOf(m, isKnownHead);
    // Not a reference: let the scan continue right after '<' (e.g. "<b><start.x>").
    if (token === null) re.lastIndex = m.index + 1;
    else found.push({ index: m.index, token });
  }
  return found;
}

const TOKEN_AT_RE = new RegExp(TOKEN_RE.source, 'uy');

/**
 * The token starting exactly at `index` of `text`, or null: what scanTokens would find there, without
 * scanning the rest (a code scanner asks at every `<` and `{`, so scanning on would make it quadratic).
 */
export function tokenAt(text: string, index: number, isKnownHead: HeadPredicate): Token | null {
  TOKEN_AT_RE.lastIndex = index;
  const m = TOKEN_AT_RE.exec(text);
  return m === null ? null : tokenOf(m, isKnownHead);
}

/** Splits a string into literal parts and tokens; null when it has no tokens. */
export function parseTemplate(text: string, isKnownHead: HeadPredicate): TemplatePart[] | null {
  const tokens = scanTokens(text, isKnownHead);
  if (tokens.length === 0) return null;
  const parts: TemplatePart[] = [];
  let pos = 0;
  for (const { index, token } of tokens) {
    if (index > pos) parts.push(text.slice(pos, index));
    parts.push(token);
    pos = index + token.raw.length;
  }
  if (pos < text.length) parts.push(text.slice(pos));
  return parts;
}

/** A string read as plain text rather than JSON: a path into it reads only its `length`. */
const PLAIN: unique symbol = Symbol('plain text');

/** The string trimmed when it looks like JSON text (`{...}` or `[...]`), else null. */
function jsonLooking(str: string): string | null {
  // Allow JSON text to be navigated (outputs of http blocks with text bodies, start fields).
  const trimmed = str.trim();
  return trimmed.length > 1 && (trimmed[0] === '{' || trimmed[0] === '[') ? trimmed : null;
}

function parseOrPlain(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return PLAIN;
  }
}

/** What a step into a string reads: the JSON text it holds, parsed, or PLAIN. */
function parseJsonText(str: string): unknown {
  const json = jsonLooking(str);
  return json === null ? PLAIN : parseOrPlain(json);
}

/**
 * Walks a path into a value; undefined when any step is missing. A string on the way is read as the JSON
 * text it holds (`{...}` or `[...]`); otherwise only its `length` can be read. `readText` reads such a string
 * (a Resolution parses each one once); `holder[key]` is where `value` was found, when it came from somewhere.
 */
export function navigate(
  value: unknown,
  path: readonly (string | number)[],
  readText: (str: string, holder: object | undefined, key: string | undefined) => unknown = parseJsonText,
  holder?: object,
  key?: string,
): unknown {
  let cur: unknown = value;
  let from = holder;
  let at = key;
  for (const seg of path) {
    if (cur === null || cur === undefined) return undefined;
    if (typeof cur === 'string') {
      const str: string = cur;
      cur = readText(str, from, at);
      if (cur === PLAIN) return seg === 'length' ? str.length : undefined;
    }
    if (typeof cur !== 'object' || cur === null) return undefined;
    const k = typeof seg === 'number' ? String(seg) : seg;
    if (!Object.prototype.hasOwnProperty.call(cur, k)) return undefined;
    from = cur;
    at = k;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

/** How a value reads when interpolated into a longer string. */
export function formatInterpolated(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
}

/** What one block's references may bring in: this many block output caps of JSON (see Resolution). */
const RESOLVED_BLOCK_CAPS = 2;

/**
 * One resolution: one block's config, or the bindings of one code call (docs/architecture.md, "Where limits are
 * enforced"). It parses each string a path leads into at most once, however many references do (an audit's
 * 2,000 references into one 3.5 MB string parsed it 2,000 times inside one step), and at most one block output
 * cap of JSON text in all; it lets references bring in at most RESOLVED_BLOCK_CAPS caps of JSON. Past either it
 * throws, and the block fails. Parsed strings are remembered by the object and key holding them, not by their
 * text: V8 hashes a string longer than 16,383 characters by its length alone, so a map keyed by such strings
 * compares them whole on every lookup.
 */
export class Resolution {
  private parsed: WeakMap<object, Map<string, unknown>> | null = null;
  private parsedChars = 0;
  /** JSON bytes references have brought in: values whole, and text interpolated into longer strings. */
  private brought = 0;
  private readonly maxParsedChars: number;
  private readonly maxBrought: number;
  private readonly read = (str: string, holder: object | undefined, key: string | undefined): unknown => this.readText(str, holder, key);

  constructor(maxBlockOutputBytes: number) {
    this.maxParsedChars = maxBlockOutputBytes;
    this.maxBrought = RESOLVED_BLOCK_CAPS * maxBlockOutputBytes;
  }

  /** navigate(), parsing each string at most once in this resolution. */
  navigate(value: unknown, path: readonly (string | number)[], holder?: object, key?: string): unknown {
    return navigate(value, path, this.read, holder, key);
  }

  /**
   * A value a reference brings in whole (not copied), counted by its JSON size: a config holding it many
   * times costs nothing to build but is written out whole by whatever serializes it (the trace's input, an
   * http body, the sandbox's bindings). Past the bound on what references bring in, an error.
   */
  value(value: unknown): unknown {
    this.brought += measureJson(value, this.maxBrought - this.brought).bytes;
    if (this.brought > this.maxBrought) throw this.tooLarge();
    return value;
  }

  /** A value as it reads inside a longer string, counted by its length; past the bound, an error. */
  interpolate(value: unknown): string {
    const text = formatInterpolated(value);
    this.brought += text.length;
    if (this.brought > this.maxBrought) throw this.tooLarge();
    return text;
  }

  private tooLarge(): Error {
    return new Error(
      `references resolve to more than ${this.maxBrought} bytes of JSON (the limit for one block, ${RESOLVED_BLOCK_CAPS} times maxBlockOutputBytes)`,
    );
  }

  private readText(str: string, holder: object | undefined, key: string | undefined): unknown {
    // Longer than any string a block output or the run's variables can hold (a definition's own text can be):
    // read as plain text, as a string that is not JSON is.
    if (str.length > this.maxParsedChars) return PLAIN;
    if (holder === undefined || key === undefined) return this.parse(str);
    this.parsed ??= new WeakMap();
    let byKey = this.parsed.get(holder);
    if (byKey === undefined) {
      byKey = new Map();
      this.parsed.set(holder, byKey);
    } else if (byKey.has(key)) {
      return byKey.get(key);
    }
    // Remembered also when it is not JSON, so a long invalid text or leading whitespace is looked at once.
    const value = this.parse(str);
    byKey.set(key, value);
    return value;
  }

  private parse(str: string): unknown {
    const json = jsonLooking(str);
    if (json === null) return PLAIN;
    this.parsedChars += json.length;
    if (this.parsedChars > this.maxParsedChars) {
      throw new Error(
        `references parse more than ${this.maxParsedChars} characters of JSON text (the limit for one block, maxBlockOutputBytes); ` +
          'parse the text once in a function block and reference that block\'s output',
      );
    }
    return parseOrPlain(json);
  }
}

export interface ResolveEnv {
  ref(token: RefToken): unknown;
  secret(name: string): string | undefined;
  /** What a string that is exactly one token resolves to, given the token's value (a Resolution counts it). */
  value(value: unknown): unknown;
  /** How a token's value reads inside a longer string (formatInterpolated; a Resolution counts it). */
  interpolate(value: unknown): string;
}

/** A compiled config value: resolve it against an environment. */
export type ValueResolver = (env: ResolveEnv) => unknown;

function resolveToken(token: Token, env: ResolveEnv): unknown {
  if (token.kind === 'ref') {
    const v = env.ref(token);
    return v === undefined ? null : v;
  }
  const s = env.secret(token.name);
  return s === undefined ? token.raw : s;
}

function compileString(text: string, isKnownHead: HeadPredicate): ValueResolver | null {
  const parts = parseTemplate(text, isKnownHead);
  if (parts === null) return null;
  if (parts.length === 1 && typeof parts[0] !== 'string') {
    const token = parts[0];
    return (env) => env.value(resolveToken(token, env));
  }
  return (env) => {
    let out = '';
    for (const p of parts) out += typeof p === 'string' ? p : env.interpolate(resolveToken(p, env));
    return out;
  };
}

/**
 * Compiles a config value (any JSON) into a resolver: strings that are exactly one reference get
 * the referenced value with its type; references inside longer strings are interpolated.
 * Returns null when the value holds no reference (resolve = identity, no copy).
 */
export function compileValue(value: unknown, isKnownHead: HeadPredicate): ValueResolver | null {
  if (typeof value === 'string') return compileString(value, isKnownHead);
  if (Array.isArray(value)) {
    const items = value.map((v) => compileValue(v, isKnownHead));
    if (items.every((r) => r === null)) return null;
    return (env) => value.map((v, i) => {
      const r = items[i];
      return r === null ? v : r(env);
    });
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).map(
      ([k, v]) => [k, v, compileValue(v, isKnownHead)] as const,
    );
    if (entries.every(([, , r]) => r === null)) return null;
    return (env) => {
      const out: Record<string, unknown> = {};
      for (const [k, v, r] of entries) out[k] = r === null ? v : r(env);
      return out;
    };
  }
  return null;
}

/** Every token in every string of a value, with the path of the string inside the value. */
export function collectTokens(
  value: unknown,
  isKnownHead: HeadPredicate,
  path: (string | number)[] = [],
  out: { path: (string | number)[]; token: Token }[] = [],
): { path: (string | number)[]; token: Token }[] {
  if (typeof value === 'string') {
    for (const { token } of scanTokens(value, isKnownHead)) out.push({ path, token });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => collectTokens(v, isKnownHead, [...path, i], out));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) collectTokens(v, isKnownHead, [...path, k], out);
  }
  return out;
}
