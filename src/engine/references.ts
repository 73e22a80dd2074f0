// References in config values: `<blockName.path[0].field>`, `<start.x>`, `<variable.x>`,
// `<loop.index|currentItem|items>`, `<parallel.*>`, `<containerName.results>` and `{{SECRET}}`.
//
// Heuristic (so `a < b`, `x<3` or `<b>` in HTML are not references): a reference is `<`, a name
// segment starting with a letter or underscore, an optional path, `>`, with no spaces. A name
// without a path counts only when it is a known name; with a path it is always a reference (and
// validation reports it when the name is unknown).

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

/** Walks a path into a value; undefined when any step is missing. */
export function navigate(value: unknown, path: readonly (string | number)[]): unknown {
  let cur: unknown = value;
  for (const seg of path) {
    if (cur === null || cur === undefined) return undefined;
    if (typeof cur === 'string') {
      // Allow JSON text to be navigated (outputs of http blocks with text bodies, start fields).
      const str: string = cur;
      const trimmed = str.trim();
      if ((trimmed.startsWith('{') || trimmed.startsWith('[')) && trimmed.length > 1) {
        try {
          cur = JSON.parse(trimmed) as unknown;
        } catch {
          return seg === 'length' ? str.length : undefined;
        }
      } else {
        return seg === 'length' ? str.length : undefined;
      }
    }
    if (typeof cur !== 'object' || cur === null) return undefined;
    const key = typeof seg === 'number' ? String(seg) : seg;
    if (!Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
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

export interface ResolveEnv {
  ref(token: RefToken): unknown;
  secret(name: string): string | undefined;
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
    return (env) => resolveToken(token, env);
  }
  return (env) => {
    let out = '';
    for (const p of parts) out += typeof p === 'string' ? p : formatInterpolated(resolveToken(p, env));
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
