// Token counts of chunk text. BPE is quadratic in the length of one pre-token, so a run of more than
// LONGEST_COUNTED_WORD non-whitespace characters is counted in slices of that length (a chunk of 256,000
// hyphens took 10 s to count whole); slicing only adds a token or so at each cut, so the count stays an upper
// bound of the true one.
import { countTokens } from '../tokenizer.js';
import { hasLongWord, isWhitespace } from './text-scan.js';

/** Longest run of non-whitespace whose tokens are counted whole. */
export const LONGEST_COUNTED_WORD = 256;

/** Tokens of the text, a long run of non-whitespace counted in slices (see above). */
export function tokenCount(text: string): number {
  if (text === '') return 0;
  if (!hasLongWord(text, LONGEST_COUNTED_WORD)) return countTokens(text);
  let total = 0;
  let counted = 0;
  let runStart = -1;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && !isWhitespace(text.charCodeAt(i))) {
      if (runStart < 0) runStart = i;
      continue;
    }
    if (runStart >= 0 && i - runStart > LONGEST_COUNTED_WORD) {
      if (runStart > counted) total += countTokens(text.slice(counted, runStart));
      for (let at = runStart; at < i;) {
        let end = Math.min(i, at + LONGEST_COUNTED_WORD);
        if (isHighSurrogate(text.charCodeAt(end - 1)) && end < i) end++;
        total += countTokens(text.slice(at, end));
        at = end;
      }
      counted = i;
    }
    runStart = -1;
  }
  if (counted < text.length) total += countTokens(text.slice(counted));
  return total;
}

export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
