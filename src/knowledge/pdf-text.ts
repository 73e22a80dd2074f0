// Repairs of PDF text that the text layer loses or breaks, so that what is indexed is what the reader sees:
// - words hyphenated across a line break are joined ("man-\nagement" -> "management"), unless the
//   document also writes the hyphenated form on one line (a real compound: "read-\nonly" stays "read-only");
// - identifiers broken after an underscore at a line end are joined ("ASN1_MAX_\nNAME_SIZE");
// - underscores typeset as drawn rules (TeX does this in its bold and roman fonts, so headings and
//   parameter names come out as "asn1 get length der") are put back where the document spells the same
//   words with underscores elsewhere (in its typewriter font, which keeps them). Only where the words
//   cannot be ordinary prose: a whole line, a line's leading "name:", or words that hold a digit or
//   three or more parts.
// Pure functions over the pages' text; lines are separated by "\n".

const IDENTIFIER = /\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b/g;
/** Bounds the work on huge documents: the identifiers past this many are left as they are. */
const MAX_IDENTIFIERS = 5000;

export function repairPdfText(pages: readonly string[]): string[] {
  const joined = pages.map(joinBrokenIdentifiers);
  const compounds = hyphenatedCompounds(joined);
  const dehyphenated = joined.map((page) => joinHyphenatedWords(page, compounds));
  const identifiers = knownIdentifiers(dehyphenated);
  return identifiers.size === 0 ? dehyphenated : dehyphenated.map((page) => restoreUnderscores(page, identifiers));
}

export function joinBrokenIdentifiers(text: string): string {
  return text.replace(/([A-Za-z0-9]_)[ \t]*\n[ \t]*(?=[A-Za-z0-9])/g, '$1');
}

// Words are matched only from their first letter (`(?<!\p{L})`). Without that, a word not followed by the
// hyphen is scanned again from each of its letters: quadratic, 8 s for a word of 80,000 letters. The matches
// are the same: from any later letter the word's run ends at the same place, so a match could only have
// started there if the word's first letter lay before where the search resumed, and a search resumes after a
// match, which never ends inside a word.
const COMPOUND = /(?<!\p{L})\p{L}+-\p{L}+/gu;
const HYPHENATED_LINE_END = /(?<!\p{L})(\p{L}+)-[ \t]*\n[ \t]*(\p{L}+)(\S*)[ \t]*(\n|$)?/gu;

/** Hyphenated words that the document writes on one line ("read-only"), lower-cased. */
export function hyphenatedCompounds(pages: readonly string[]): Set<string> {
  const found = new Set<string>();
  for (const page of pages) for (const m of page.matchAll(COMPOUND)) found.add(m[0].toLowerCase());
  return found;
}

/**
 * Joins a word split by a hyphen at a line end when both halves are lower case, or both upper case
 * ("SE-\nQUENCE"); a capital after the break ("Dss-\nSig") or a known compound keeps its hyphen, joined
 * on one line.
 */
export function joinHyphenatedWords(text: string, compounds: ReadonlySet<string> = new Set()): string {
  return text.replace(HYPHENATED_LINE_END, (match, left: string, right: string, trail: string, end: string | undefined) => {
    const lower = /\p{Ll}$/u.test(left) && /^\p{Ll}/u.test(right);
    const upper = /^\p{Lu}+$/u.test(left) && /^\p{Lu}+$/u.test(right);
    const compound = compounds.has(`${left}-${right}`.toLowerCase());
    if (!lower && !upper && !compound) return match;
    // The word's second half moves up to the first line; the rest of its line stays where it was.
    return `${left}${compound ? '-' : ''}${right}${trail}${end ?? '\n'}`;
  });
}

interface Identifier {
  name: string;
  /** Safe to restore anywhere in a line (not only as a whole line or a leading "name:"). */
  anywhere: boolean;
}

function knownIdentifiers(pages: readonly string[]): Map<string, Identifier> {
  const byWords = new Map<string, Identifier>();
  for (const page of pages) {
    for (const m of page.matchAll(IDENTIFIER)) {
      const parts = m[0].split('_').filter((p) => p !== '');
      if (parts.length < 2) continue;
      const spaced = parts.join(' ');
      if (byWords.has(spaced)) continue;
      byWords.set(spaced, { name: m[0], anywhere: parts.length >= 3 || parts.some((p) => /\d/.test(p)) });
      if (byWords.size >= MAX_IDENTIFIERS) return byWords;
    }
  }
  return byWords;
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function restoreUnderscores(text: string, identifiers: ReadonlyMap<string, Identifier>): string {
  const anywhere = [...identifiers.entries()].filter(([, id]) => id.anywhere).map(([spaced]) => spaced);
  // Longest first, so "a b c" wins over "a b".
  anywhere.sort((a, b) => b.length - a.length);
  const inline = anywhere.length > 0 ? new RegExp(`(?<![\\w])(?:${anywhere.map(escape).join('|')})(?![\\w])`, 'g') : undefined;
  return text.split('\n').map((line) => {
    const trimmed = line.trim();
    const whole = identifiers.get(trimmed);
    if (whole) return line.replace(trimmed, whole.name);
    const label = /^(\s*)([A-Za-z0-9]+(?: [A-Za-z0-9]+)+):/.exec(line);
    const labelled = label ? identifiers.get(label[2] as string) : undefined;
    let out = labelled && label ? `${label[1]}${labelled.name}${line.slice(label[0].length - 1)}` : line;
    if (inline) out = out.replace(inline, (spaced) => identifiers.get(spaced)?.name ?? spaced);
    return out;
  }).join('\n');
}
