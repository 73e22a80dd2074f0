// Linear scans over untrusted document text, where a regular expression or the tokenizer would be quadratic:
// - `/[ \t]+$/gm` and `/\n+$/` backtrack over a long run of blanks (or newlines) that does not end the text;
// - BPE tokenizing is quadratic in the length of one pre-token, and a run of whitespace is one pre-token;
// - a regular expression's backtracking stack overflows on a run of a few million characters (`/\S{257,}/`
//   threw "Maximum call stack size exceeded" on a word of 6 million, failing the document).
// One line of a million spaces then "x" held an ingest worker for about 17 minutes on each of them.

/** The line terminators of a JavaScript regular expression's `$` in multiline mode. */
const isLineTerminator = (code: number): boolean => code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029;

const isBlank = (code: number): boolean => code === 0x20 || code === 0x09;

/** Drops the spaces and tabs that end each line, keeping indentation and the line terminators. */
export function trimLineEnds(text: string): string {
  const parts: string[] = [];
  let lineStart = 0;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && !isLineTerminator(text.charCodeAt(i))) continue;
    let end = i;
    while (end > lineStart && isBlank(text.charCodeAt(end - 1))) end--;
    parts.push(text.slice(lineStart, end));
    if (i < text.length) parts.push(text[i] as string);
    lineStart = i + 1;
  }
  return parts.join('');
}

/** Drops the newlines that end the text. */
export function trimTrailingNewlines(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0x0a) end--;
  return end === text.length ? text : text.slice(0, end);
}

/** Drops blank lines at both ends and trailing spaces, keeping indentation. */
export function trimLines(text: string): string {
  const trimmed = trimTrailingNewlines(trimLineEnds(text));
  let start = 0;
  while (start < trimmed.length && trimmed.charCodeAt(start) === 0x0a) start++;
  return start === 0 ? trimmed : trimmed.slice(start);
}

/** Longest run of whitespace kept whole; see `shortenWhitespaceRuns`. Matches the chunker's longest counted word. */
export const MAX_WHITESPACE_RUN = 256;

/**
 * Cuts each run of whitespace longer than `max` to its last `max` characters (which hold the indentation of
 * the line after it), with a newline in front when the cut one held a line break. Such runs are layout only,
 * and counting the tokens of one costs the square of its length.
 */
export function shortenWhitespaceRuns(text: string, max = MAX_WHITESPACE_RUN): string {
  let parts: string[] | undefined;
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    if (!isWhitespace(text.charCodeAt(i))) { i++; continue; }
    const start = i;
    let newline = false;
    for (; i < text.length && isWhitespace(text.charCodeAt(i)); i++) {
      if (text.charCodeAt(i) === 0x0a) newline = true;
    }
    if (i - start <= max) continue;
    let kept = text.slice(i - max, i);
    if (newline && !kept.includes('\n')) kept = `\n${kept.slice(1)}`;
    (parts ??= []).push(text.slice(copied, start), kept);
    copied = i;
  }
  if (!parts) return text;
  parts.push(text.slice(copied));
  return parts.join('');
}

/** Whether the text holds more than `max` non-whitespace characters in a row. */
export function hasLongWord(text: string, max: number): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    if (isWhitespace(text.charCodeAt(i))) run = 0;
    else if (++run > max) return true;
  }
  return false;
}

/** Drops the blank lines (spaces and tabs only) that start the text. */
export function dropLeadingBlankLines(text: string): string {
  let cut = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x0a) cut = i + 1;
    else if (!isBlank(code)) break;
  }
  return cut === 0 ? text : text.slice(cut);
}

/** `\s` of a JavaScript regular expression (and so of the tokenizer's pre-tokenizing). */
export function isWhitespace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029
    || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff;
}
