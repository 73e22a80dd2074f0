import { describe, expect, it } from 'vitest';
import { chunkDocument } from '../../src/knowledge/chunker.js';
import { parseDocument } from '../../src/knowledge/parse.js';
import { hyphenatedCompounds, joinHyphenatedWords } from '../../src/knowledge/pdf-text.js';
import { identifierPhrases } from '../../src/knowledge/text-search-store.js';
import { MAX_WHITESPACE_RUN, shortenWhitespaceRuns, trimLines } from '../../src/knowledge/text-scan.js';

// The linear replacements of the regular expressions that backtracked quadratically on hostile text: the same
// results as the old expressions (kept here as the reference) on ordinary and random text, and hostile sizes
// that the old ones would have taken minutes over finish within the test's timeout.

const oldTrimLines = (text: string): string => text.replace(/[ \t]+$/gm, '').replace(/^\n+|\n+$/g, '');
const oldCompounds = (pages: string[]): Set<string> => new Set(pages.flatMap((p) => [...p.matchAll(/\p{L}+-\p{L}+/gu)].map((m) => m[0].toLowerCase())));
const oldJoinHyphenated = (text: string, compounds: ReadonlySet<string>): string =>
  text.replace(/(\p{L}+)-[ \t]*\n[ \t]*(\p{L}+)(\S*)[ \t]*(\n|$)?/gu, (match, left: string, right: string, trail: string, end: string | undefined) => {
    const lower = /\p{Ll}$/u.test(left) && /^\p{Ll}/u.test(right);
    const upper = /^\p{Lu}+$/u.test(left) && /^\p{Lu}+$/u.test(right);
    const compound = compounds.has(`${left}-${right}`.toLowerCase());
    if (!lower && !upper && !compound) return match;
    return `${left}${compound ? '-' : ''}${right}${trail}${end ?? '\n'}`;
  });
const oldIdentifierPhrases = (query: string): string[] => [...new Set(query.match(/[\p{L}\p{N}]+(?:[_./:-][\p{L}\p{N}]+)+/gu) ?? [])].slice(0, 8);

/** Deterministic random strings over a small alphabet, so that every interleaving of its characters occurs. */
function randomTexts(alphabet: string[], count: number, maxLength: number): string[] {
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: count }, () => Array.from({ length: Math.floor(next() * maxLength) }, () => alphabet[Math.floor(next() * alphabet.length)]).join(''));
}

const MILLION = 1_000_000;

describe('trimLines', () => {
  it('gives what the old expressions gave on ordinary text', () => {
    const samples = [
      '', 'plain', '  indented\nline  \n', '\n\nfirst\n\n', 'a \t \nb\t\n\n  c  ', '\n', ' \n \n ', 'tail spaces   ', 'crlf \r\nline \r\n',
      'separators \u2028next \u2029last ', 'ünïcödé  \n  日本語\t',
    ];
    for (const text of samples) expect(trimLines(text), JSON.stringify(text)).toBe(oldTrimLines(text));
  });

  it('gives what the old expressions gave on random text', () => {
    for (const text of randomTexts([' ', '\t', '\n', '\r', '\u2028', 'a', 'é', '\u00a0'], 3000, 24)) {
      expect(trimLines(text), JSON.stringify(text)).toBe(oldTrimLines(text));
    }
  });

  it('trims a line of a million spaces then "x", and a million blank lines, in one pass', () => {
    expect(trimLines(`start${' '.repeat(MILLION)}x  \n`)).toBe(`start${' '.repeat(MILLION)}x`);
    expect(trimLines(`a\n${'  \n'.repeat(MILLION)}  b`)).toBe(`a\n${'\n'.repeat(MILLION)}  b`);
  });
});

describe('shortenWhitespaceRuns', () => {
  it('leaves text without a run over the limit as it is', () => {
    for (const text of ['', 'a b', `a${' '.repeat(MAX_WHITESPACE_RUN)}b`, `x\n${'\t'.repeat(100)}y`]) expect(shortenWhitespaceRuns(text)).toBe(text);
  });

  it('keeps the last characters of a long run, with a line break in front when the run held one', () => {
    expect(shortenWhitespaceRuns(`a${' '.repeat(1000)}b`)).toBe(`a${' '.repeat(MAX_WHITESPACE_RUN)}b`);
    expect(shortenWhitespaceRuns(`a\n${' '.repeat(1000)}b`)).toBe(`a\n${' '.repeat(MAX_WHITESPACE_RUN - 1)}b`);
    expect(shortenWhitespaceRuns(`a${'\n'.repeat(1000)}    b`)).toBe(`a${'\n'.repeat(MAX_WHITESPACE_RUN - 4)}    b`);
    expect(shortenWhitespaceRuns(`${'\u3000'.repeat(500)}x${'\u00a0'.repeat(300)}`, 4)).toBe('\u3000'.repeat(4) + 'x' + '\u00a0'.repeat(4));
  });

  it('leaves no run over the limit and changes nothing else, on random text', () => {
    for (const text of randomTexts([' ', '\n', '\t', 'a', '\u00a0'], 2000, 40)) {
      const short = shortenWhitespaceRuns(text, 3);
      expect(short.match(/\s{4,}/)).toBeNull();
      expect(short.replace(/\s+/g, ' ')).toBe(text.replace(/\s+/g, ' '));
    }
  });
});

describe('PDF hyphen repair', () => {
  it('finds the same compounds and joins the same words as the old expressions, on ordinary text', () => {
    const pages = [
      'The read-only flag is set.\nA man-\nagement report and a read-\nonly copy.', 'SE-\nQUENCE and Dss-\nSig stay apart.\nnon-\n  trivial   work\nend-',
      'déjà-\nvu über-\nAll, a-b-c-\nd e', 'x-\n\ny- \t\n\tz tail\n',
    ];
    const compounds = hyphenatedCompounds(pages);
    expect(compounds).toEqual(oldCompounds(pages));
    for (const page of pages) expect(joinHyphenatedWords(page, compounds)).toBe(oldJoinHyphenated(page, compounds));
  });

  it('finds the same compounds and joins the same words as the old expressions, on random text', () => {
    const compounds = new Set(['a-b', 'ab-ba']);
    for (const text of randomTexts(['a', 'B', 'é', '-', ' ', '\t', '\n', '1', '_'], 4000, 30)) {
      expect(hyphenatedCompounds([text]), JSON.stringify(text)).toEqual(oldCompounds([text]));
      expect(joinHyphenatedWords(text, compounds), JSON.stringify(text)).toBe(oldJoinHyphenated(text, compounds));
    }
  });

  it('reads a word of a million letters in one pass', () => {
    const word = 'a'.repeat(MILLION);
    expect(hyphenatedCompounds([`${word} read-only`])).toEqual(new Set(['read-only']));
    expect(joinHyphenatedWords(`${word} man-\nagement`)).toBe(`${word} management\n`);
  });
});

describe('identifier phrases of a search query', () => {
  it('are those the old expression found', () => {
    const queries = ['asn1_get_length_der and user.mime_type', 'ubuntu 22.04 text/plain', 'plain words', 'a-b_c.d e:f'];
    for (const query of [...queries, ...randomTexts(['a', '1', '_', '.', ' ', '-', 'é'], 2000, 30)]) {
      expect(identifierPhrases(query), JSON.stringify(query)).toEqual(oldIdentifierPhrases(query));
    }
  });

  it('reads a query of one long word in one pass', () => {
    expect(identifierPhrases(`${'a'.repeat(MILLION)} x.y`)).toEqual(['x.y']);
  });
});

describe('parsing and chunking hostile text', () => {
  const chunking = { maxSize: 1024, minSize: 1, overlap: 200 };
  const cases: [string, 'txt' | 'md' | 'yaml' | 'html', string, string][] = [
    ['a line of a million spaces then x', 'txt', `start ${' '.repeat(MILLION)}x\n`, 'start x'],
    ['the same in Markdown', 'md', `start ${' '.repeat(MILLION)}x\n`, 'start x'],
    ['a code block of a million blank lines', 'md', `\`\`\`\na\n${'\n'.repeat(MILLION)}b\n\`\`\`\n`, 'a b'],
    ['a YAML mapping split by a million blank lines', 'yaml', `a: 1\n${'\n'.repeat(MILLION)}  b: 2\n`, 'a: 1 b: 2'],
    ['a million no-break spaces', 'txt', `a${'\u00a0'.repeat(MILLION)}x`, 'a x'],
    ['a million ideographic spaces', 'txt', `a${'\u3000'.repeat(MILLION)}x`, 'a x'],
    ['preformatted HTML spaces', 'html', `<pre>start ${' '.repeat(MILLION)}x</pre>`, 'start x'],
  ];
  for (const [name, kind, text, words] of cases) {
    it(`takes ${name} (the old code: minutes)`, async () => {
      const chunks = chunkDocument(await parseDocument(kind, new TextEncoder().encode(text)), chunking);
      expect(chunks).toHaveLength(1);
      expect(chunks[0]?.content.replace(/\s+/g, ' ')).toBe(words);
      expect(chunks[0]?.content.match(/\s{257,}/)).toBeNull();
    });
  }

  it('takes a CSV whose header is one word of a million letters', async () => {
    const csv = `h${'a'.repeat(MILLION)},b\n1,2\n`;
    const chunks = chunkDocument(await parseDocument('csv', new TextEncoder().encode(csv)), chunking);
    expect(chunks.length).toBeGreaterThan(1);
  });
});
