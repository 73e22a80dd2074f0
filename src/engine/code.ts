// Turns code with references into code plus bindings: values are never pasted into code.
// A reference (or known secret) in code position becomes an injected variable holding the typed
// value; inside a string or template literal it becomes string concatenation / `${}` with the
// value in its interpolated string form. Comments and regex literals are left untouched.
import { scanTokens, tokenAt, type HeadPredicate, type Token } from './references.js';

export interface CodeBinding {
  name: string;
  token: Token;
  /** 'value': the typed value; 'string': the interpolated string form. */
  mode: 'value' | 'string';
}

/** A stretch of the bound code that replaced a stretch of the source of another length. */
export interface RewrittenRegion {
  outStart: number;
  outEnd: number;
  srcStart: number;
  srcEnd: number;
}

export interface BoundCode {
  code: string;
  bindings: CodeBinding[];
  /** Rewritten stretches in order; everything between them is copied from the source as written. */
  regions: RewrittenRegion[];
}

const LINE_BREAK = /\r\n|[\n\r\u2028\u2029]/g;

/** Offset of a 1-based line and column. */
function offsetOf(text: string, line: number, column: number): number {
  const re = new RegExp(LINE_BREAK.source, 'g');
  let start = 0;
  for (let l = 1; l < line; l++) {
    const m = re.exec(text);
    if (m === null) break;
    start = m.index + m[0].length;
  }
  return Math.min(text.length, start + Math.max(0, column - 1));
}

/** 1-based line and column of an offset. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  const re = new RegExp(LINE_BREAK.source, 'g');
  let line = 1;
  let start = 0;
  for (let m = re.exec(text); m !== null && m.index < offset; m = re.exec(text)) {
    line++;
    start = m.index + m[0].length;
  }
  return { line, column: offset - start + 1 };
}

/** Where a 1-based line and column of the bound code is in the user's source (1-based). */
export function sourcePosition(source: string, bound: BoundCode, line: number, column: number): { line: number; column: number } {
  return lineColumn(source, sourceOffset(bound, offsetOf(bound.code, line, column)));
}

/** The source offset that produced offset `outOffset` of the bound code. */
export function sourceOffset(bound: BoundCode, outOffset: number): number {
  let delta = 0;
  for (const r of bound.regions) {
    if (outOffset < r.outStart) break;
    if (outOffset < r.outEnd) return r.srcStart;
    delta = r.srcEnd - r.outEnd;
  }
  return outOffset + delta;
}

const REGEX_PRECEDING_WORDS = new Set([
  'return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'instanceof', 'yield', 'await',
]);

class Binder {
  readonly bindings: CodeBinding[] = [];
  private readonly byKey = new Map<string, string>();

  constructor(private readonly prefix: string) {}

  name(token: Token, mode: 'value' | 'string'): string {
    const key = `${mode}\u0000${token.raw}`;
    let name = this.byKey.get(key);
    if (name === undefined) {
      name = `${this.prefix}${this.bindings.length}`;
      this.byKey.set(key, name);
      this.bindings.push({ name, token, mode });
    }
    return name;
  }
}

export function bindCode(
  source: string,
  isKnownHead: HeadPredicate,
  isSecret: (name: string) => boolean,
  prefix = '__ref',
): BoundCode {
  const binder = new Binder(prefix);
  const tokensIn = (text: string) =>
    scanTokens(text, isKnownHead).filter(({ token }) => token.kind === 'ref' || isSecret(token.name));

  if (tokensIn(source).length === 0) return { code: source, bindings: [], regions: [] };

  let i = 0;
  const n = source.length;
  let out = '';
  const regions: RewrittenRegion[] = [];
  /** Appends `text` produced from source[srcStart, srcEnd), noting it when it differs. */
  const emit = (text: string, srcStart: number, srcEnd: number): void => {
    if (text.length !== srcEnd - srcStart || text !== source.slice(srcStart, srcEnd)) {
      regions.push({ outStart: out.length, outEnd: out.length + text.length, srcStart, srcEnd });
    }
    out += text;
  };
  // Last significant character/word in code position, for regex-vs-division detection.
  let lastSignificant = '';

  const codeTokenAt = (pos: number): { length: number; text: string } | null => {
    const ch = source[pos];
    if (ch !== '<' && ch !== '{') return null;
    // Match a token starting exactly here (within 400 characters, as the references of templates).
    const token = tokenAt(source.slice(pos, pos + 400), 0, isKnownHead);
    if (token === null || (token.kind !== 'ref' && !isSecret(token.name))) return null;
    return { length: token.raw.length, text: binder.name(token, 'value') };
  };

  const rewriteQuoted = (body: string, quote: string): string => {
    // body: raw text between the quotes (escapes kept as written).
    const hits = tokensIn(body);
    if (hits.length === 0) return quote + body + quote;
    const pieces: string[] = [];
    let pos = 0;
    for (const { index, token } of hits) {
      if (index > pos) pieces.push(quote + body.slice(pos, index) + quote);
      pieces.push(binder.name(token, 'string'));
      pos = index + token.raw.length;
    }
    if (pos < body.length) pieces.push(quote + body.slice(pos) + quote);
    if (pieces.length === 1) return pieces[0].startsWith(quote) ? pieces[0] : `String(${pieces[0]})`;
    if (pieces[0].startsWith(quote)) return `(${pieces.join(' + ')})`;
    return `(${quote}${quote} + ${pieces.join(' + ')})`;
  };

  const rewriteTemplateText = (text: string): string => {
    const hits = tokensIn(text);
    if (hits.length === 0) return text;
    let res = '';
    let pos = 0;
    for (const { index, token } of hits) {
      res += text.slice(pos, index) + '${' + binder.name(token, 'string') + '}';
      pos = index + token.raw.length;
    }
    return res + text.slice(pos);
  };

  const scanString = (quote: string): void => {
    // i points at the opening quote.
    const start = i + 1;
    let j = start;
    while (j < n && source[j] !== quote && source[j] !== '\n') {
      if (source[j] === '\\') j += 2;
      else j += 1;
    }
    const body = source.slice(start, Math.min(j, n));
    const open = i;
    i = j < n && source[j] === quote ? j + 1 : j;
    if (i > n) i = n;
    emit(rewriteQuoted(body, quote), open, i);
    lastSignificant = 'a'; // a string literal ends an expression
  };

  const scanRegex = (): void => {
    let j = i + 1;
    let inClass = false;
    while (j < n && source[j] !== '\n') {
      const c = source[j];
      if (c === '\\') { j += 2; continue; }
      if (c === '[') inClass = true;
      else if (c === ']') inClass = false;
      else if (c === '/' && !inClass) break;
      j += 1;
    }
    j += 1;
    while (j < n && /[a-z]/i.test(source[j])) j += 1;
    out += source.slice(i, Math.min(j, n));
    i = Math.min(j, n);
    lastSignificant = 'a';
  };

  // Scans code until an unmatched `}` (when inTemplateExpr) or the end.
  const scanCode = (inTemplateExpr: boolean): void => {
    let depth = 0;
    while (i < n) {
      const ch = source[i];
      const next = source[i + 1];
      if (ch === '/' && next === '/') {
        const end = source.indexOf('\n', i);
        const j = end === -1 ? n : end;
        out += source.slice(i, j);
        i = j;
        continue;
      }
      if (ch === '/' && next === '*') {
        const end = source.indexOf('*/', i + 2);
        const j = end === -1 ? n : end + 2;
        out += source.slice(i, j);
        i = j;
        continue;
      }
      if (ch === '"' || ch === "'") { scanString(ch); continue; }
      if (ch === '`') { scanTemplate(); continue; }
      if (ch === '/') {
        const regexAllowed = lastSignificant === '' || /[([{,;:=!&|?+\-*%<>~^]$/.test(lastSignificant) || REGEX_PRECEDING_WORDS.has(lastSignificant);
        if (regexAllowed) { scanRegex(); continue; }
        out += ch; i += 1; lastSignificant = ch; continue;
      }
      const tok = codeTokenAt(i);
      if (tok) {
        emit(tok.text, i, i + tok.length);
        i += tok.length;
        lastSignificant = 'a';
        continue;
      }
      if (ch === '{') depth += 1;
      if (ch === '}') {
        if (depth === 0 && inTemplateExpr) return;
        depth -= 1;
      }
      if (/[\p{L}\p{N}_$]/u.test(ch)) {
        let j = i + 1;
        while (j < n && /[\p{L}\p{N}_$]/u.test(source[j])) j += 1;
        const word = source.slice(i, j);
        out += word;
        i = j;
        lastSignificant = word;
        continue;
      }
      out += ch;
      i += 1;
      if (!/\s/.test(ch)) lastSignificant = ch;
    }
  };

  const scanTemplate = (): void => {
    // i points at the opening backtick.
    out += '`';
    i += 1;
    let textStart = i;
    while (i < n) {
      const ch = source[i];
      if (ch === '\\') { i += 2; continue; }
      if (ch === '`') {
        emit(rewriteTemplateText(source.slice(textStart, i)), textStart, i);
        out += '`';
        i += 1;
        lastSignificant = 'a';
        return;
      }
      if (ch === '$' && source[i + 1] === '{') {
        emit(rewriteTemplateText(source.slice(textStart, i)), textStart, i);
        out += '${';
        i += 2;
        lastSignificant = '';
        scanCode(true);
        if (i < n) { out += '}'; i += 1; }
        textStart = i;
        continue;
      }
      i += 1;
    }
    emit(rewriteTemplateText(source.slice(textStart, Math.min(i, n))), textStart, Math.min(i, n));
  };

  scanCode(false);
  return { code: out, bindings: binder.bindings, regions };
}
