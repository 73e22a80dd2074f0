// Turns an uploaded document into an ordered list of structural blocks (headings, paragraphs, code, table rows)
// that the chunker packs into chunks. Pure: no I/O beyond the bytes handed in.
// Over 450 lines because it holds one small reader per file kind (ten kinds) behind one entry point; each
// reader is short and they share the decoding and error helpers, so one file reads better than ten.
import { convert, type FormatCallback, type HtmlToTextOptions } from 'html-to-text';
import { lexer, type MarkedToken, type Token, type Tokens } from 'marked';
import { parse as parseCsv } from 'csv-parse/sync';
import mammoth from 'mammoth';
import { pptxBlocks } from './pptx.js';
import readXlsxFile from 'read-excel-file/node';
import { extractText, getDocumentProxy } from 'unpdf';
import type { DocumentKind } from './file-types.js';
import { checkBound, count, type IngestBounds, UNBOUNDED } from './ingest-bounds.js';
import { tableFormatter } from './html-tables.js';
import { trimLines, trimTrailingNewlines } from './text-scan.js';
import { codePointLength, DocumentParseError, type ParsedBlock, type ParsedDocument } from './parsed-document.js';
import { repairPdfText } from './pdf-text.js';
import { rowRecord } from './table-records.js';
import { guardArchive } from './zip-guard.js';

export { codePointLength, DocumentParseError, type ParsedBlock, type ParsedDocument };

const NO_TEXT = 'The document contains no text';

/** Parses within `bounds` (see ingest-bounds.ts): a document over one is refused with DocumentBoundError. */
export async function parseDocument(kind: DocumentKind, bytes: Uint8Array, bounds: IngestBounds = UNBOUNDED): Promise<ParsedDocument> {
  const blocks = (await parseBlocks(kind, bytes, bounds)).filter((block) => block.text.trim() !== '');
  if (blocks.length === 0) throw new DocumentParseError(NO_TEXT);
  let characterCount = 0;
  for (const block of blocks) characterCount += codePointLength(block.text);
  checkBound(bounds, 'maxCharacters', characterCount, (n) => `it holds ${count(n)}`);
  return { blocks, characterCount };
}

async function parseBlocks(kind: DocumentKind, bytes: Uint8Array, bounds: IngestBounds): Promise<ParsedBlock[]> {
  switch (kind) {
    case 'txt': return paragraphs(decodeText(bytes));
    case 'md': return markdownBlocks(decodeText(bytes));
    case 'html': return htmlBlocks(decodeText(bytes));
    case 'csv': return csvBlocks(decodeText(bytes), bounds);
    case 'json': return jsonBlocks(decodeText(bytes));
    case 'jsonl': return jsonlBlocks(decodeText(bytes));
    case 'yaml': return yamlBlocks(decodeText(bytes));
    case 'pdf': return pdfBlocks(bytes, bounds);
    case 'docx': return docxBlocks(bytes, bounds);
    case 'xlsx': return xlsxBlocks(bytes, bounds);
    case 'pptx': return pptxBlocks(bytes, bounds);
  }
}


// ---------- text decoding ----------

function decodeText(bytes: Uint8Array): string {
  let text: string;
  try {
    // UTF-16 is accepted only with a byte order mark; the UTF-8 decoder strips a UTF-8 BOM itself.
    if (bytes[0] === 0xff && bytes[1] === 0xfe) text = new TextDecoder('utf-16le', { fatal: true }).decode(bytes.subarray(2));
    else if (bytes[0] === 0xfe && bytes[1] === 0xff) text = new TextDecoder('utf-16be', { fatal: true }).decode(bytes.subarray(2));
    else text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new DocumentParseError('The file is not UTF-8 text');
  }
  // NUL never occurs in text files; valid-UTF-8 binaries would otherwise slip through.
  if (text.includes('\u0000')) throw new DocumentParseError('The file is not UTF-8 text');
  return text.replace(/\r\n?/g, '\n');
}

// ---------- plain text, YAML ----------

function paragraphs(text: string, extra: Partial<ParsedBlock> = {}): ParsedBlock[] {
  const out: ParsedBlock[] = [];
  for (const part of text.split(/\n[ \t]*\n/)) {
    const trimmed = trimLines(part);
    if (trimmed) out.push({ kind: 'text', text: trimmed, ...extra });
  }
  return out;
}

// A blank line splits YAML only where the next line is unindented, so a nested mapping stays in one block.
function yamlBlocks(text: string): ParsedBlock[] {
  const out: ParsedBlock[] = [];
  let current: string[] = [];
  let blankSeen = false;
  const flush = (): void => {
    const block = trimLines(current.join('\n'));
    if (block) out.push({ kind: 'text', text: block });
    current = [];
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') { blankSeen = true; current.push(''); continue; }
    if (line === '---' || line === '...') { flush(); blankSeen = false; continue; }
    if (blankSeen && !/^\s/.test(line)) flush();
    blankSeen = false;
    current.push(line);
  }
  flush();
  return out;
}

// ---------- Markdown ----------

function markdownBlocks(text: string): ParsedBlock[] {
  const out: ParsedBlock[] = [];
  // YAML front matter would otherwise lex as a rule plus a setext heading.
  const front = /^---\n([\s\S]*?)\n(?:---|\.\.\.)[ \t]*(?:\n|$)/.exec(text);
  if (front) {
    const yaml = trimLines(front[1]);
    if (yaml) out.push({ kind: 'text', text: yaml });
    text = text.slice(front[0].length);
  }
  markdownTokens(lexer(text, { gfm: true }), out);
  return out;
}

function markdownTokens(tokens: readonly Token[], out: ParsedBlock[]): void {
  for (const token of tokens) {
    const t = token as MarkedToken;
    switch (t.type) {
      case 'heading': {
        const text = collapse(inlineText(t.tokens, t.text));
        if (text) out.push({ kind: 'heading', text, level: t.depth });
        break;
      }
      case 'paragraph':
      case 'text':
        out.push({ kind: 'text', text: trimLines(inlineText(t.tokens, t.text)) });
        break;
      case 'code':
        out.push({ kind: 'code', text: trimTrailingNewlines(t.text) });
        break;
      case 'list':
        // One block per list, an item a line: a long list is still cut between lines.
        out.push({ kind: 'text', text: t.items.map((item, i) => listItemText(item, listMarker(t, i), '')).join('\n') });
        break;
      case 'table':
        out.push({ kind: 'text', text: tableText(t) });
        break;
      case 'blockquote':
        markdownTokens(t.tokens, out);
        break;
      case 'html':
        out.push(...paragraphs(htmlToText(t.text)));
        break;
      case 'space':
      case 'hr':
      case 'def':
        break;
      default: {
        const raw = (token as { text?: unknown }).text;
        if (typeof raw === 'string') out.push({ kind: 'text', text: trimLines(raw) });
      }
    }
  }
}

function listMarker(list: Tokens.List, index: number): string {
  if (!list.ordered) return '- ';
  const start = typeof list.start === 'number' ? list.start : 1;
  return `${start + index}. `;
}

function listItemText(item: Tokens.ListItem, marker: string, indent: string): string {
  const lines: string[] = [];
  for (const token of item.tokens) {
    const t = token as MarkedToken;
    if (t.type === 'list') {
      t.items.forEach((child, i) => lines.push(listItemText(child, listMarker(t, i), `${indent}  `)));
    } else if (t.type === 'code') {
      lines.push(indentLines(t.text, `${indent}  `));
    } else if (t.type === 'table') {
      lines.push(indentLines(tableText(t), `${indent}  `));
    } else if (t.type !== 'space' && t.type !== 'checkbox') {
      const text = trimLines(inlineText((t as { tokens?: Token[] }).tokens, (t as { text?: string }).text ?? ''));
      if (text) lines.push(indentLines(text, `${indent}  `));
    }
  }
  const task = item.task ? (item.checked ? '[x] ' : '[ ] ') : '';
  const body = lines.join('\n').slice(indent.length + 2);
  return `${indent}${marker}${task}${body}`;
}

function indentLines(text: string, indent: string): string {
  return text.split('\n').map((line) => indent + line).join('\n');
}

function tableText(table: Tokens.Table): string {
  const cells = (row: Tokens.TableCell[]): string => row.map((cell) => collapse(inlineText(cell.tokens, cell.text))).join(' | ');
  return [cells(table.header), ...table.rows.map(cells)].join('\n');
}

/** Plain text of inline markdown: emphasis and links keep their words, images their alt text, markup goes. */
function inlineText(tokens: readonly Token[] | undefined, fallback: string): string {
  if (!tokens) return decodeEntities(fallback);
  let text = '';
  for (const token of tokens) {
    const t = token as MarkedToken;
    switch (t.type) {
      case 'br': text += '\n'; break;
      case 'image': text += t.text; break;
      case 'codespan': text += decodeEntities(t.text); break;
      case 'html': if (/^<br\s*\/?>$/i.test(t.text)) text += '\n'; break;
      case 'checkbox': break;
      default: {
        const nested = (t as { tokens?: Token[] }).tokens;
        const raw = (t as { text?: unknown }).text;
        text += nested ? inlineText(nested, '') : typeof raw === 'string' ? decodeEntities(raw) : '';
      }
    }
  }
  return text;
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (match, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : match;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? match;
  });
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

// ---------- HTML, DOCX ----------

// Private-use marker put before each heading's text by the heading formatter, then read back when splitting.
const HEADING_MARK = '\uE000';
const HEADING_LINE = new RegExp(`^${HEADING_MARK}([1-6])${HEADING_MARK}([\\s\\S]*)$`);

const headingFormatter: FormatCallback = (elem, walk, builder) => {
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addLiteral(`${HEADING_MARK}${(elem.name ?? 'h1').slice(1)}${HEADING_MARK}`);
  walk(elem.children, builder);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

// Table cells become "a | b" on one line per row.
const cellFormatter: FormatCallback = (elem, walk, builder) => {
  const siblings = elem.parent?.children.filter((n) => n.type === 'tag' && (n.name === 'td' || n.name === 'th')) ?? [];
  if (siblings[0] !== elem) builder.addLiteral(' | ');
  walk(elem.children, builder);
};

const HTML_OPTIONS: HtmlToTextOptions = {
  wordwrap: false,
  // Default truncation of long input is silent; deep nesting is cut instead of overflowing the stack.
  limits: { maxInputLength: Number.MAX_SAFE_INTEGER, maxDepth: 256 },
  formatters: { weftHeading: headingFormatter, weftCell: cellFormatter, weftTable: tableFormatter },
  selectors: [
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, format: 'weftHeading' })),
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'ul', options: { itemPrefix: '- ' } },
    { selector: 'table', format: 'weftTable' },
    { selector: 'tr', format: 'block', options: { leadingLineBreaks: 1, trailingLineBreaks: 1 } },
    { selector: 'td', format: 'weftCell' },
    { selector: 'th', format: 'weftCell' },
    ...['script', 'style', 'noscript', 'template', 'svg', 'iframe', 'object', 'canvas', 'head', 'button', 'select']
      .map((selector) => ({ selector, format: 'skip' })),
  ],
};

function htmlToText(html: string): string {
  try {
    return convert(html.replaceAll(HEADING_MARK, ''), HTML_OPTIONS);
  } catch (error) {
    throw new DocumentParseError(`The HTML could not be read: ${messageOf(error)}`);
  }
}

function htmlBlocks(html: string): ParsedBlock[] {
  const out: ParsedBlock[] = [];
  for (const block of paragraphs(htmlToText(html))) {
    const heading = HEADING_LINE.exec(block.text);
    if (!heading) { out.push(block); continue; }
    const text = collapse(heading[2]);
    if (text) out.push({ kind: 'heading', text, level: Number(heading[1]) });
  }
  return out;
}

async function docxBlocks(bytes: Uint8Array, bounds: IngestBounds): Promise<ParsedBlock[]> {
  // mammoth gets the archive rebuilt within the inflate bounds, never the uploaded one.
  const { repacked } = guardArchive(bytes, 'DOCX', bounds);
  let html: string;
  try {
    // Images would otherwise be inlined as base64 data URIs only to be dropped again.
    const result = await mammoth.convertToHtml({ buffer: repacked }, {
      convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: '' })),
    });
    html = result.value;
  } catch (error) {
    throw new DocumentParseError(`The DOCX file could not be read: ${messageOf(error)}`);
  }
  return htmlBlocks(html);
}

// ---------- CSV ----------

function csvBlocks(text: string, bounds: IngestBounds): ParsedBlock[] {
  let records: string[][];
  try {
    records = parseCsv(text, {
      delimiter: sniffDelimiter(text),
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      // The header plus one row past the bound is enough to refuse the file; the rest is never parsed.
      ...(Number.isFinite(bounds.maxRows) ? { to: bounds.maxRows + 2 } : {}),
    }) as string[][];
  } catch (error) {
    throw new DocumentParseError(`The CSV could not be parsed: ${messageOf(error)}`);
  }
  checkBound(bounds, 'maxRows', records.length - 1);
  return tableBlocks(records.map((record) => record.map(collapse)));
}

/** The delimiter (comma, semicolon, tab or pipe) that occurs most often outside quotes in the first line. */
function sniffDelimiter(text: string): string {
  const counts = new Map<string, number>([[',', 0], [';', 0], ['\t', 0], ['|', 0]]);
  let quoted = false;
  for (let i = 0; i < text.length && i < 65_536; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && c === '\n') break;
    else if (!quoted && counts.has(c)) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  let best = ',';
  for (const [delimiter, count] of counts) if (count > (counts.get(best) ?? 0)) best = delimiter;
  return best;
}

/** First non-empty row is the header; each later non-empty row one record block, numbered from 1 after the header. */
function tableBlocks(rows: string[][], sheet?: string): ParsedBlock[] {
  const start = rows.findIndex((row) => row.some((cell) => cell !== ''));
  if (start < 0) return [];
  const header = rows[start].join(' | ');
  const out: ParsedBlock[] = [];
  for (let i = start + 1; i < rows.length; i++) {
    if (!rows[i].some((cell) => cell !== '')) continue;
    out.push({ kind: 'table-row', text: rowRecord(rows[start], rows[i]), row: i - start, header, ...(sheet === undefined ? {} : { sheet }) });
  }
  // A header without data rows still carries text worth finding.
  if (out.length === 0) out.push({ kind: 'text', text: header, ...(sheet === undefined ? {} : { sheet }) });
  return out;
}

// ---------- XLSX ----------

async function xlsxBlocks(bytes: Uint8Array, bounds: IngestBounds): Promise<ParsedBlock[]> {
  const { parts, repacked } = guardArchive(bytes, 'XLSX', bounds);
  // Rows are counted in the sheets' XML before the parser builds them all in memory.
  let sheetRows = 0;
  for (const [name, xml] of parts) if (/^xl\/worksheets\/[^/]+\.xml$/i.test(name)) sheetRows += countRowElements(xml);
  checkBound(bounds, 'maxRows', sheetRows, (n) => `its sheets have ${count(n)}`);
  let sheets: { sheet: string; data: unknown[][] }[];
  try {
    sheets = await readXlsxFile(repacked);
  } catch (error) {
    throw new DocumentParseError(`The XLSX file could not be read: ${messageOf(error)}`);
  }
  return sheets.flatMap(({ sheet, data }) => tableBlocks(data.map((row) => row.map(cellText)), sheet));
}

/** Occurrences of a `<row>` element (with or without attributes) in sheet XML. */
function countRowElements(xml: Buffer): number {
  let n = 0;
  for (let i = xml.indexOf('<row'); i >= 0; i = xml.indexOf('<row', i + 4)) {
    const next = xml[i + 4];
    if (next === 0x20 || next === 0x3e || next === 0x2f || next === 0x09 || next === 0x0a || next === 0x0d) n++;
  }
  return n;
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) {
    const iso = value.toISOString();
    return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso;
  }
  return collapse(String(value));
}

// ---------- JSON, JSONL ----------

function jsonBlocks(text: string): ParsedBlock[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new DocumentParseError(`The file is not valid JSON: ${messageOf(error)}`);
  }
  // One block per top-level entry, so records stay together when chunked.
  const entries: [string, unknown][] = Array.isArray(value)
    ? value.map((item, i) => [`[${i}]`, item])
    : isRecord(value) && Object.keys(value).length > 0
      ? Object.entries(value).map(([key, item]) => [keyPath('', key), item])
      : [['', value]];
  return entries.map(([path, item]) => ({ kind: 'text', text: flattenJson(item, path).join('\n') }));
}

function jsonlBlocks(text: string): ParsedBlock[] {
  const out: ParsedBlock[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new DocumentParseError(`Line ${i + 1} is not valid JSON: ${messageOf(error)}`);
    }
    out.push({ kind: 'table-row', text: flattenJson(value, '').join('\n'), row: i + 1 });
  });
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function keyPath(parent: string, key: string): string {
  const plain = /^[\p{L}\p{N}_$-]+$/u.test(key);
  if (!plain) return `${parent}[${JSON.stringify(key)}]`;
  return parent ? `${parent}.${key}` : key;
}

/** "path.to.key: value" lines, depth-first in document order; iterative so deep nesting cannot overflow the stack. */
function flattenJson(root: unknown, rootPath: string): string[] {
  const lines: string[] = [];
  const stack: [string, unknown][] = [[rootPath, root]];
  while (stack.length > 0) {
    const [path, value] = stack.pop() as [string, unknown];
    const prefix = path ? `${path}: ` : '';
    if (Array.isArray(value)) {
      if (value.length === 0) lines.push(`${prefix}[]`);
      for (let i = value.length - 1; i >= 0; i--) stack.push([`${path}[${i}]`, value[i]]);
    } else if (isRecord(value)) {
      const keys = Object.keys(value);
      if (keys.length === 0) lines.push(`${prefix}{}`);
      for (let i = keys.length - 1; i >= 0; i--) stack.push([keyPath(path, keys[i]), value[keys[i]]]);
    } else {
      lines.push(`${prefix}${value === null ? 'null' : String(value)}`);
    }
  }
  return lines;
}

// ---------- PDF ----------

async function pdfBlocks(bytes: Uint8Array, bounds: IngestBounds): Promise<ParsedBlock[]> {
  let pages: string[];
  // pdf.js takes ownership of (detaches) the buffer it is given, so it gets a copy.
  const pdf = await getDocumentProxy(bytes.slice(), { verbosity: 0 }).catch((error: unknown) => {
    throw pdfError(error);
  });
  try {
    // The page count comes from the page tree, before any page's text is read.
    checkBound(bounds, 'maxPdfPages', pdf.numPages, (n) => `it has ${count(n)}`);
  } catch (error) {
    await pdf.loadingTask.destroy().catch(() => undefined);
    throw error;
  }
  try {
    pages = (await extractText(pdf, { mergePages: false })).text;
  } catch (error) {
    throw pdfError(error);
  } finally {
    await pdf.loadingTask.destroy().catch(() => undefined);
  }
  const repaired = repairPdfText(pages.map((text) => text.replace(/[ \t]+/g, ' ')));
  return repaired.flatMap((text, i) => paragraphs(text, { page: i + 1 }));
}

function pdfError(error: unknown): DocumentParseError {
  const name = error instanceof Error ? error.name : '';
  const reason = name === 'PasswordException' ? 'it is encrypted with a password' : messageOf(error);
  return new DocumentParseError(`The PDF could not be read: ${reason}`);
}

// ---------- helpers ----------

function messageOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim().slice(0, 300) || 'unknown error';
}
