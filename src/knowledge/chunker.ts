// Packs parsed blocks into token-bounded chunks for embedding. Over 450 lines: one state machine (the
// Chunker class) whose splitting, overlap and merge rules depend on each other; split apart they would
// share all of its state.
//
// Choices worth knowing:
// - Breaks are preferred at headings (a heading always starts a new chunk once the current one has body text),
//   then between blocks, then at sentence or line ends, then between words; a word is cut only when it alone
//   is longer than a chunk.
// - A chunk's content is a verbatim excerpt of the extracted text (a run of whitespace over 256 characters cut to
//   256, see text-scan.ts): the heading path is NOT prefixed to it, it is in metadata.headings so the caller can add it as context when embedding or showing the chunk.
// - Overlap: a chunk after a size break starts with the tail (about `overlap` tokens but at most half the previous
//   chunk, starting at a word and, where that keeps at least half of it, a sentence) of the previous one. There is no overlap after a heading
//   break (it would mix sections) nor between table rows (each chunk repeats the header line instead).
//   When the next block would not fit beside the full overlap, the overlap shrinks (to at least half) before
//   the block is split.
// - Token counts are taken per block and per piece, then checked once per chunk on the finished content (a
//   long run of non-whitespace counted in slices, see token-count.ts).
import { codePointLength, type ParsedBlock, type ParsedDocument } from './parsed-document.js';
import { dropLeadingBlankLines, hasLongWord, shortenWhitespaceRuns } from './text-scan.js';
import { isHighSurrogate, LONGEST_COUNTED_WORD, tokenCount } from './token-count.js';

export { tokenCount };

export interface ChunkingConfig {
  /** Largest chunk, in tokens, overlap included. */
  maxSize: number;
  /** A final chunk with fewer new characters than this is merged into the previous one when the result fits. */
  minSize: number;
  /** Tokens of the previous chunk repeated at the start of the next one. */
  overlap: number;
}

export interface DocumentChunk {
  index: number;
  content: string;
  tokenCount: number;
  /** Unicode characters (code points). */
  characterCount: number;
  /** headings?: string[]; page?: number; pages?: [first, last]; sheet?: string; rows?: [first, last]. */
  metadata: Record<string, unknown>;
}

export function chunkDocument(doc: ParsedDocument, config: ChunkingConfig): DocumentChunk[] {
  const maxSize = Math.max(1, Math.floor(config.maxSize));
  // At most half a chunk, so every chunk still brings new text.
  const overlap = Math.min(Math.max(0, Math.floor(config.overlap)), Math.floor(maxSize / 2));
  const chunker = new Chunker(maxSize, overlap, Math.max(0, config.minSize));
  for (const block of doc.blocks) chunker.add(block);
  return chunker.finish();
}

// ---------- internals ----------

// Split levels: a whole block, sentences or lines, words (2), hard pieces of one overlong word.
const BLOCK = 0;
const SENTENCE = 1;
const HARD = 3;

const TEXT_MODE = '\u0000text';

interface Unit {
  text: string;
  /** Whitespace that joins it to what precedes it in the source. */
  sep: string;
  level: number;
  heading: boolean;
  block: ParsedBlock;
  tokens?: number;
}

interface Part {
  text: string;
  sep: string;
  tokens: number;
  role: 'overlap' | 'fixed' | 'body';
  unit?: Unit;
  pages: number[];
  rows: number[];
}

interface Built {
  content: string;
  tokens: number;
  mode: string;
  headings: string[];
  pages: number[];
  rows: number[];
  sheet?: string;
  /** The content minus overlap and repeated header, and the separator that joined it to what preceded it. */
  fresh: string;
  freshSep: string;
}

interface Previous {
  content: string;
  tokens: number;
  from: number;
  spans: { end: number; pages: number[]; rows: number[] }[];
}

const sepTokenCache = new Map<string, number>();
function sepTokens(sep: string): number {
  let n = sepTokenCache.get(sep);
  if (n === undefined) {
    n = tokenCount(sep);
    if (sepTokenCache.size < 1000) sepTokenCache.set(sep, n);
  }
  return n;
}

class Chunker {
  private readonly out: Built[] = [];
  private readonly stack: Unit[] = [];
  private parts: Part[] = [];
  private estimate = 0;
  private bodyCount = 0;
  private mode = TEXT_MODE;
  private headings: { level: number; text: string }[] = [];
  private previous: Previous | undefined;

  constructor(private readonly maxSize: number, private readonly overlap: number, private readonly minSize: number) {}

  add(block: ParsedBlock): void {
    const text = shortenWhitespaceRuns(dropLeadingBlankLines(block.text)).trimEnd();
    if (text.trim() === '') return;
    if (block.kind === 'heading') {
      this.breakSection();
      this.mode = TEXT_MODE;
      const level = block.level ?? 1;
      while (this.headings.length > 0 && this.headings[this.headings.length - 1].level >= level) this.headings.pop();
      this.headings.push({ level, text: text.trim() });
      this.stack.push({ text, sep: '\n\n', level: BLOCK, heading: true, block });
    } else {
      const mode = block.kind === 'table-row' ? `${block.sheet ?? ''}\u0000${block.header ?? ''}` : TEXT_MODE;
      if (mode !== this.mode) {
        this.breakSection();
        this.mode = mode;
      }
      // Rows of a table with a header are lines; headerless records (JSONL) are paragraphs.
      const sep = block.kind === 'table-row' && block.header !== undefined ? '\n' : '\n\n';
      this.stack.push({ text, sep, level: BLOCK, heading: false, block });
    }
    this.drain();
  }

  finish(): DocumentChunk[] {
    this.flushAll();
    // A document may end with headings and nothing under them.
    if (this.parts.some((part) => part.role === 'fixed')) this.flush(false);
    this.mergeTail();
    return this.out.map((built, index) => ({
      index,
      content: built.content,
      tokenCount: built.tokens,
      characterCount: codePointLength(built.content),
      metadata: metadataOf(built),
    }));
  }

  /** Ends the current chunk without overlap (new section or new table); a chunk of headings alone carries on. */
  private breakSection(): void {
    this.flushAll();
    this.previous = undefined;
    if (this.parts.some((part) => part.role === 'overlap')) this.removeOverlap();
    // A table header belongs to its table only.
    if (this.parts.some((part) => part.role === 'fixed' && !part.unit?.heading)) {
      this.parts = this.parts.filter((part) => part.role !== 'fixed' || part.unit?.heading);
      this.recompute();
    }
  }

  /** Places every pending unit and emits the last chunk if it has body text. */
  private flushAll(): void {
    for (;;) {
      this.drain();
      if (this.bodyCount > 0) this.flush(false);
      if (this.stack.length === 0 && this.bodyCount === 0) return;
    }
  }

  private drain(): void {
    while (this.stack.length > 0) {
      const unit = this.stack[this.stack.length - 1];
      // BPE is quadratic in the length of one run of letters: never count a long run whole, split it first.
      if (unit.tokens === undefined && unit.level < HARD && hasLongWord(unit.text, LONGEST_COUNTED_WORD)) {
        this.stack.pop();
        this.pushReversed(splitUnit(unit, this.hardLimit()));
        continue;
      }
      const tokens = (unit.tokens ??= tokenCount(unit.text));
      if (this.bodyCount === 0) this.openChunk(unit);
      const sepCost = this.parts.length > 0 ? sepTokens(unit.sep) : 0;
      if (this.estimate + sepCost + tokens <= this.maxSize) {
        this.stack.pop();
        this.append(unit, tokens, sepCost);
        continue;
      }
      if (this.bodyCount > 0) {
        this.flush(this.mode === TEXT_MODE);
        continue;
      }
      // Nothing but headings, a table header or an overlap precedes it: shrink the overlap or split the unit.
      const overlapPart = this.parts.find((part) => part.role === 'overlap');
      if (overlapPart) {
        // Keep the unit whole beside a smaller overlap if at least half the overlap remains; otherwise split it.
        const budget = this.maxSize - sepTokens(unit.sep) - tokens;
        if (budget >= Math.ceil(this.overlap / 2) || unit.level === HARD) {
          this.setOverlap(budget); // strictly smaller than before, or gone
          continue;
        }
      }
      if (unit.level < HARD) {
        this.stack.pop();
        this.pushReversed(splitUnit(unit, this.hardLimit()));
      } else if (this.parts.some((part) => part.unit?.heading)) {
        this.flush(false); // a cut word cannot follow the headings: they go out alone
      } else {
        // Only a table header, or nothing, precedes it: drop the header, or accept a lone character over maxSize.
        this.stack.pop();
        this.parts = [];
        this.recompute();
        this.append(unit, tokens, 0);
      }
    }
  }

  /** A chunk of table rows starts with the table's header line. */
  private openChunk(unit: Unit): void {
    const header = unit.block.kind === 'table-row' ? unit.block.header : undefined;
    if (header === undefined || this.parts.some((part) => part.role === 'fixed' && !part.unit)) return;
    // A header too large to repeat would crowd out the rows; one holding a long run is not counted at all (see LONGEST_COUNTED_WORD).
    if (hasLongWord(header, LONGEST_COUNTED_WORD)) return;
    const tokens = tokenCount(header);
    if (tokens > this.maxSize / 2) return;
    this.parts.push({ text: header, sep: '\n\n', tokens, role: 'fixed', pages: [], rows: [] });
    this.recompute();
  }

  private append(unit: Unit, tokens: number, sepCost: number): void {
    const role = unit.heading ? 'fixed' : 'body';
    this.parts.push({
      text: unit.text, sep: unit.sep, tokens, role, unit,
      pages: unit.block.page === undefined ? [] : [unit.block.page],
      rows: unit.block.row === undefined ? [] : [unit.block.row],
    });
    this.estimate += sepCost + tokens;
    if (role === 'body') this.bodyCount++;
  }

  private hardLimit(): number {
    let fixed = 0;
    for (const part of this.parts) if (part.role === 'fixed') fixed += part.tokens + 1;
    return Math.max(1, this.maxSize - this.overlap - fixed - 2);
  }

  private pushReversed(units: Unit[]): void {
    for (let i = units.length - 1; i >= 0; i--) this.stack.push(units[i]);
  }

  private recompute(): void {
    this.estimate = 0;
    this.bodyCount = 0;
    this.parts.forEach((part, i) => {
      this.estimate += part.tokens + (i > 0 ? sepTokens(part.sep) : 0);
      if (part.role === 'body') this.bodyCount++;
    });
  }

  private removeOverlap(): void {
    this.parts = this.parts.filter((part) => part.role !== 'overlap');
    this.recompute();
  }

  /** Emits the current chunk (after checking its real token count) and, if asked, seeds the next with overlap. */
  private flush(withOverlap: boolean): void {
    let content = joinParts(this.parts);
    let tokens = tokenCount(content);
    // Per-piece counts almost always add up; when they do not, give text back rather than exceed maxSize.
    while (tokens > this.maxSize) {
      const last = this.parts[this.parts.length - 1];
      if (last.role === 'body' && this.bodyCount > 1 && last.unit) {
        this.parts.pop();
        this.stack.push(last.unit);
      } else if (this.parts.some((part) => part.role === 'overlap')) {
        this.parts = this.parts.filter((part) => part.role !== 'overlap');
      } else if (last.role === 'body' && last.unit && codePointLength(last.text) > 1) {
        this.parts.pop();
        this.pushReversed(splitUnit(last.unit, Math.max(1, Math.min(this.hardLimit(), Math.floor(last.tokens / 2)))));
        this.recompute();
        return;
      } else {
        break;
      }
      this.recompute();
      content = joinParts(this.parts);
      tokens = tokenCount(content);
    }

    const spans: Previous['spans'] = [];
    let offset = 0;
    let from = -1;
    let freshIndex = -1;
    this.parts.forEach((part, i) => {
      offset += (i > 0 ? part.sep.length : 0) + part.text.length;
      spans.push({ end: offset, pages: part.pages, rows: part.rows });
      if (from < 0 && part.role !== 'fixed') from = offset - part.text.length;
      const isFresh = part.role === 'body' || (part.role === 'fixed' && part.unit?.heading === true);
      if (freshIndex < 0 && isFresh) freshIndex = i;
    });
    const freshStart = freshIndex < 0 ? content.length : spans[freshIndex].end - this.parts[freshIndex].text.length;
    this.out.push({
      content,
      tokens,
      mode: this.mode,
      headings: this.headings.map((heading) => heading.text),
      pages: this.parts.flatMap((part) => part.pages),
      rows: this.parts.flatMap((part) => part.rows),
      sheet: this.parts.find((part) => part.unit?.block.sheet !== undefined)?.unit?.block.sheet,
      fresh: content.slice(freshStart),
      freshSep: freshIndex < 0 ? '\n\n' : this.parts[freshIndex].sep,
    });
    this.parts = [];
    this.estimate = 0;
    this.bodyCount = 0;
    this.previous = withOverlap && this.overlap > 0 && from >= 0 ? { content, tokens, from, spans } : undefined;
    if (this.previous) this.setOverlap(this.overlap);
  }

  /** Makes the current chunk start with at most `budget` tokens of the previous chunk's tail; false if none fit. */
  private setOverlap(budget: number): boolean {
    this.parts = this.parts.filter((part) => part.role !== 'overlap');
    const previous = this.previous;
    // At most half the previous chunk, so a short chunk is not repeated whole inside the next.
    const limit = previous ? Math.min(budget, this.overlap, Math.floor(previous.tokens / 2)) : 0;
    const found = previous && limit > 0 ? overlapTail(previous.content, previous.from, limit) : undefined;
    if (previous && found) {
      const covered = previous.spans.filter((span) => span.end > found.start);
      this.parts.unshift({
        text: previous.content.slice(found.start), sep: '', tokens: found.tokens, role: 'overlap',
        pages: covered.flatMap((span) => span.pages), rows: covered.flatMap((span) => span.rows),
      });
    }
    this.recompute();
    return found !== undefined;
  }

  private mergeTail(): void {
    if (this.out.length < 2) return;
    const tail = this.out[this.out.length - 1];
    const prev = this.out[this.out.length - 2];
    if (tail.mode !== prev.mode || codePointLength(tail.fresh) >= this.minSize || tail.fresh === '') return;
    const content = prev.content + tail.freshSep + tail.fresh;
    const tokens = tokenCount(content);
    if (tokens > this.maxSize) return;
    let common = 0;
    while (common < prev.headings.length && common < tail.headings.length && prev.headings[common] === tail.headings[common]) common++;
    this.out.splice(this.out.length - 2, 2, {
      ...prev,
      content,
      tokens,
      headings: prev.headings.slice(0, common),
      pages: [...prev.pages, ...tail.pages],
      rows: [...prev.rows, ...tail.rows],
    });
  }
}

function joinParts(parts: readonly Part[]): string {
  let text = '';
  parts.forEach((part, i) => { text += (i > 0 ? part.sep : '') + part.text; });
  return text;
}

function metadataOf(built: Built): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  if (built.headings.length > 0) metadata.headings = built.headings;
  if (built.pages.length > 0) {
    const first = Math.min(...built.pages);
    const last = Math.max(...built.pages);
    if (first === last) metadata.page = first;
    else metadata.pages = [first, last];
  }
  if (built.sheet !== undefined) metadata.sheet = built.sheet;
  if (built.rows.length > 0) metadata.rows = [Math.min(...built.rows), Math.max(...built.rows)];
  return metadata;
}

// ---------- splitting ----------

const CLOSERS = '"\')]}’”»';
const SENTENCE_END = '.!?…';

/** Whether the text before position `end` (exclusive) finishes a sentence. */
function endsSentence(text: string, end: number): boolean {
  let j = end - 1;
  while (j >= 0 && end - j <= 3 && CLOSERS.includes(text[j])) j--;
  return j >= 0 && (SENTENCE_END.includes(text[j]) || '。！？'.includes(text[j]));
}

/** Splits a unit one level finer (sentences or lines, then words, then hard pieces of at most `limit` tokens). */
function splitUnit(unit: Unit, limit: number): Unit[] {
  for (let level = unit.level + 1; level < HARD; level++) {
    const pieces = splitAtWhitespace(unit, level);
    if (pieces.length > 1) return pieces;
  }
  return hardSplit(unit, limit);
}

function splitAtWhitespace(unit: Unit, level: number): Unit[] {
  const { text } = unit;
  // Sentence level also cuts after CJK full stops, which are not followed by spaces.
  const pattern = level === SENTENCE ? /\s+|(?<=[。！？])(?=\S)/g : /\s+/g;
  const pieces: Unit[] = [];
  let start = 0;
  let sep = unit.sep;
  for (const match of text.matchAll(pattern)) {
    const at = match.index;
    const end = at + match[0].length;
    if (at === 0 || end >= text.length) continue;
    if (level === SENTENCE && match[0] !== '' && !match[0].includes('\n') && !endsSentence(text, at)) continue;
    pieces.push({ ...unit, text: text.slice(start, at), sep, level, tokens: undefined });
    sep = match[0];
    start = end;
  }
  pieces.push({ ...unit, text: text.slice(start), sep, level, tokens: undefined });
  return pieces;
}

const MICRO_PIECE = 64;

/** Cuts text with no usable boundary into pieces of at most `limit` tokens, never inside a surrogate pair. */
function hardSplit(unit: Unit, limit: number): Unit[] {
  const pieces: Unit[] = [];
  if (unit.text.length > 4 * MICRO_PIECE) {
    // Too long to count whole (see LONGEST_COUNTED_WORD): fixed slices, counted one by one when packed.
    for (let at = 0; at < unit.text.length;) {
      let end = Math.min(unit.text.length, at + MICRO_PIECE);
      if (isHighSurrogate(unit.text.charCodeAt(end - 1)) && end < unit.text.length) end++;
      pieces.push({ ...unit, text: unit.text.slice(at, end), sep: at === 0 ? unit.sep : '', level: HARD, tokens: undefined });
      at = end;
    }
    return pieces;
  }
  let rest = unit.text;
  let sep = unit.sep;
  while (rest !== '') {
    // Grow an upper bound (never encoding much more than one piece), then binary-search the longest prefix that fits.
    let hi = Math.min(rest.length, limit * 8);
    while (hi < rest.length && tokenCount(rest.slice(0, hi)) <= limit) hi = Math.min(rest.length, hi * 2);
    let tokens = hi === rest.length ? tokenCount(rest) : limit + 1;
    let cut = rest.length;
    if (tokens > limit) {
      let lo = 1;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (tokenCount(rest.slice(0, mid)) <= limit) lo = mid;
        else hi = mid - 1;
      }
      cut = lo;
      if (isHighSurrogate(rest.charCodeAt(cut - 1)) && cut < rest.length) cut = cut > 1 ? cut - 1 : cut + 1;
      tokens = tokenCount(rest.slice(0, cut));
    }
    pieces.push({ ...unit, text: rest.slice(0, cut), sep, level: HARD, tokens });
    rest = rest.slice(cut);
    sep = '';
  }
  return pieces;
}

/** The start of the longest tail of content[from..] within `budget` tokens that begins at a word. */
function overlapTail(content: string, from: number, budget: number): { start: number; tokens: number } | undefined {
  const windowStart = Math.max(from, content.length - budget * 16 - 64);
  const starts: number[] = [];
  for (let i = windowStart; i < content.length; i++) {
    if (/\s/.test(content[i])) continue;
    // A word starts after whitespace, or after a CJK full stop (those scripts put no spaces between words).
    if (i === from || /\s/.test(content[i - 1]) || '。！？'.includes(content[i - 1])) starts.push(i);
  }
  if (starts.length === 0) return undefined;
  // Later starts give shorter tails: find the first start whose tail fits.
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (tokenCount(content.slice(starts[mid])) <= budget) hi = mid;
    else lo = mid + 1;
  }
  if (lo === starts.length) return undefined;
  const wordStart = starts[lo];
  // Prefer the first sentence start after it when that keeps at least half of the budget.
  for (let k = lo; k < starts.length; k++) {
    const start = starts[k];
    if (!isSentenceStart(content, start, from)) continue;
    if (start === wordStart) break;
    const tokens = tokenCount(content.slice(start));
    if (tokens >= budget / 2) return { start, tokens };
    break;
  }
  return { start: wordStart, tokens: tokenCount(content.slice(wordStart)) };
}

function isSentenceStart(content: string, start: number, from: number): boolean {
  if (start === from) return true;
  let ws = start;
  while (ws > from && /\s/.test(content[ws - 1])) ws--;
  return content.slice(ws, start).includes('\n') || endsSentence(content, ws);
}
