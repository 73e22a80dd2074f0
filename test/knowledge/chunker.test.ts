import { describe, expect, it } from 'vitest';
import { chunkDocument, tokenCount, type ChunkingConfig, type DocumentChunk } from '../../src/knowledge/chunker.js';
import type { ParsedBlock, ParsedDocument } from '../../src/knowledge/parse.js';

function doc(blocks: ParsedBlock[]): ParsedDocument {
  return { blocks, characterCount: blocks.reduce((n, b) => n + b.text.length, 0) };
}

function text(...paragraphs: string[]): ParsedBlock[] {
  return paragraphs.map((p) => ({ kind: 'text', text: p }));
}

/** Deterministic pseudo-random numbers (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Paragraphs of unique words ("w17", "alpha23"...) in sentences, so every excerpt can be located in the source. */
function prose(seed: number, paragraphs: number, maxSentences = 6): string[] {
  const rand = random(seed);
  const stems = ['alpha', 'beta', 'gamma', 'delta', 'w', 'x', 'longerword', 'q'];
  let n = 0;
  const out: string[] = [];
  for (let p = 0; p < paragraphs; p++) {
    const sentences: string[] = [];
    const count = 1 + Math.floor(rand() * maxSentences);
    for (let s = 0; s < count; s++) {
      const words: string[] = [];
      const length = 3 + Math.floor(rand() * 25);
      for (let w = 0; w < length; w++) words.push(`${stems[Math.floor(rand() * stems.length)]}${n++}`);
      sentences.push(`${words.join(' ')}${rand() < 0.8 ? '.' : '!'}`);
    }
    out.push(sentences.join(' '));
  }
  return out;
}

const isSpace = (c: string | undefined): boolean => c === undefined || /\s/.test(c);

/** Every chunk is a verbatim excerpt of `source` that starts and ends on word boundaries. */
function expectWordAligned(chunks: DocumentChunk[], source: string): void {
  for (const chunk of chunks) {
    const at = source.indexOf(chunk.content);
    expect(at, `chunk ${chunk.index} is an excerpt`).toBeGreaterThanOrEqual(0);
    expect(isSpace(source[at - 1]), `chunk ${chunk.index} starts at a word: ${chunk.content.slice(0, 30)}`).toBe(true);
    expect(isSpace(source[at + chunk.content.length]), `chunk ${chunk.index} ends at a word`).toBe(true);
  }
}

function expectWithinLimits(chunks: DocumentChunk[], config: ChunkingConfig): void {
  chunks.forEach((chunk, i) => {
    expect(chunk.index).toBe(i);
    expect(chunk.content.trim()).not.toBe('');
    expect(chunk.tokenCount).toBe(tokenCount(chunk.content));
    expect(chunk.tokenCount).toBeLessThanOrEqual(config.maxSize);
    expect(chunk.characterCount).toBe([...chunk.content].length);
  });
}

/** Every source word appears whole in at least one chunk, and chunks follow the source order. */
function expectCoverage(chunks: DocumentChunk[], source: string): void {
  const chunkWords = new Set(chunks.flatMap((c) => c.content.split(/\s+/)));
  for (const word of source.split(/\s+/)) expect(chunkWords.has(word), `word ${word} kept`).toBe(true);
  let last = -1;
  for (const chunk of chunks) {
    const at = source.indexOf(chunk.content);
    expect(at).toBeGreaterThan(last);
    last = at;
  }
}

describe('chunkDocument', () => {
  it('keeps every chunk within maxSize tokens, on word boundaries, in order, with consecutive indexes', () => {
    for (const [seed, config] of [
      [1, { maxSize: 64, minSize: 0, overlap: 16 }],
      [2, { maxSize: 100, minSize: 50, overlap: 0 }],
      [3, { maxSize: 200, minSize: 20, overlap: 40 }],
      [4, { maxSize: 33, minSize: 10, overlap: 10 }],
      [5, { maxSize: 512, minSize: 200, overlap: 64 }],
    ] as const) {
      const paragraphs = prose(seed, 40);
      const chunks = chunkDocument(doc(text(...paragraphs)), config);
      const source = paragraphs.join('\n\n');
      expect(chunks.length).toBeGreaterThan(1);
      expectWithinLimits(chunks, config);
      expectWordAligned(chunks, source);
      expectCoverage(chunks, source);
    }
  });

  it('starts each chunk after a size break with an overlap taken from the end of the previous one, at a word', () => {
    const config = { maxSize: 80, minSize: 0, overlap: 20 };
    const paragraphs = prose(7, 30, 8);
    const chunks = chunkDocument(doc(text(...paragraphs)), config);
    const source = paragraphs.join('\n\n');
    let overlaps = 0;
    for (let i = 1; i < chunks.length; i++) {
      const prev = chunks[i - 1].content;
      const next = chunks[i].content;
      // The longest suffix of the previous chunk that the next one begins with.
      let shared = '';
      for (let start = 0; start < prev.length; start++) {
        if (!isSpace(prev[start - 1]) || isSpace(prev[start])) continue;
        if (next.startsWith(prev.slice(start))) { shared = prev.slice(start); break; }
      }
      if (shared === '') continue;
      overlaps++;
      expect(tokenCount(shared)).toBeLessThanOrEqual(config.overlap);
      // The overlap begins where a word begins in the source.
      const at = source.indexOf(next);
      expect(isSpace(source[at - 1])).toBe(true);
    }
    expect(overlaps).toBe(chunks.length - 1);
    expectWordAligned(chunks, source);
  });

  it('prefers to start the overlap at a sentence', () => {
    const sentence = (k: number): string => Array.from({ length: 6 }, (_, i) => `s${k}w${i}`).join(' ') + '.';
    const paragraph = Array.from({ length: 40 }, (_, k) => sentence(k)).join(' ');
    expect(tokenCount(sentence(1))).toBeLessThan(30);
    const chunks = chunkDocument(doc(text(paragraph)), { maxSize: 90, minSize: 0, overlap: 30 });
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks.slice(1)) expect(chunk.content).toMatch(/^s\d+w0 /);
  });

  it('never cuts a word, even when one paragraph is far larger than a chunk', () => {
    const words = Array.from({ length: 5000 }, (_, i) => `token${i}`);
    const paragraph = words.join(' '); // no sentence ends at all
    const config = { maxSize: 50, minSize: 0, overlap: 10 };
    const chunks = chunkDocument(doc(text(paragraph)), config);
    expectWithinLimits(chunks, config);
    expectWordAligned(chunks, paragraph);
    expectCoverage(chunks, paragraph);
    for (const chunk of chunks) for (const w of chunk.content.split(' ')) expect(w).toMatch(/^token\d+$/);
  });

  it('splits a huge paragraph at sentence ends', () => {
    const paragraph = prose(11, 1, 400)[0];
    const config = { maxSize: 120, minSize: 0, overlap: 0 };
    const chunks = chunkDocument(doc(text(paragraph)), config);
    expect(chunks.length).toBeGreaterThan(5);
    expectWithinLimits(chunks, config);
    expectWordAligned(chunks, paragraph);
    // Without overlap every chunk is whole sentences.
    for (const chunk of chunks) expect(chunk.content).toMatch(/[.!]$/);
  });

  it('hard-splits a single word longer than a chunk as a last resort', () => {
    const word = 'x'.repeat(3000);
    const chunks = chunkDocument(doc(text(`before ${word} after`)), { maxSize: 40, minSize: 0, overlap: 0 });
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(chunk.tokenCount).toBeLessThanOrEqual(40);
    expect(chunks.map((c) => c.content).join('').replace(/\s/g, '')).toBe(`before${word}after`);
  });

  it('breaks chunks at headings and records the heading path', () => {
    const blocks: ParsedBlock[] = [
      { kind: 'heading', text: 'Install', level: 1 },
      { kind: 'text', text: 'Download the package.' },
      { kind: 'heading', text: 'On Linux', level: 2 },
      { kind: 'text', text: 'Use apt.' },
      { kind: 'heading', text: 'On macOS', level: 2 },
      { kind: 'text', text: 'Use brew.' },
      { kind: 'heading', text: 'Usage', level: 1 },
      { kind: 'heading', text: 'Basics', level: 2 },
      { kind: 'text', text: 'Run it.' },
    ];
    const chunks = chunkDocument(doc(blocks), { maxSize: 500, minSize: 0, overlap: 50 });
    expect(chunks.map((c) => c.content)).toEqual([
      'Install\n\nDownload the package.',
      'On Linux\n\nUse apt.',
      'On macOS\n\nUse brew.',
      'Usage\n\nBasics\n\nRun it.',
    ]);
    expect(chunks.map((c) => c.metadata.headings)).toEqual([
      ['Install'], ['Install', 'On Linux'], ['Install', 'On macOS'], ['Usage', 'Basics'],
    ]);
  });

  it('keeps the heading path on every chunk of a long section and never overlaps across a heading', () => {
    const section1 = prose(21, 10);
    const section2 = prose(22, 10);
    const blocks: ParsedBlock[] = [
      { kind: 'heading', text: 'First', level: 1 }, ...text(...section1),
      { kind: 'heading', text: 'Second', level: 1 }, ...text(...section2),
    ];
    const chunks = chunkDocument(doc(blocks), { maxSize: 60, minSize: 0, overlap: 15 });
    const secondStart = chunks.findIndex((c) => c.content.startsWith('Second'));
    expect(secondStart).toBeGreaterThan(1);
    chunks.forEach((chunk, i) => expect(chunk.metadata.headings).toEqual([i < secondStart ? 'First' : 'Second']));
    const lastOfFirst = chunks[secondStart - 1].content.split(/\s+/).pop()!;
    expect(chunks[secondStart].content).not.toContain(lastOfFirst);
  });

  it('groups table rows under a repeated header with their row range, without overlap', () => {
    const header = 'name | city | score';
    const blocks: ParsedBlock[] = Array.from({ length: 60 }, (_, i) => ({
      kind: 'table-row', text: `person${i + 1} | town${i + 1} | ${i * 3}`, row: i + 1, header,
    }));
    const config = { maxSize: 60, minSize: 0, overlap: 20 };
    const chunks = chunkDocument(doc(blocks), config);
    expect(chunks.length).toBeGreaterThan(3);
    expectWithinLimits(chunks, config);
    let expected = 1;
    for (const chunk of chunks) {
      const lines = chunk.content.split('\n');
      expect(lines[0]).toBe(header);
      const rows = lines.slice(1).map((line) => Number(/^person(\d+) /.exec(line)![1]));
      expect(rows[0]).toBe(expected); // no row repeated (no overlap), none skipped
      expect(rows).toEqual(rows.map((_, k) => rows[0] + k));
      expect(chunk.metadata.rows).toEqual([rows[0], rows[rows.length - 1]]);
      expected = rows[rows.length - 1] + 1;
    }
    expect(expected).toBe(61);
  });

  it('starts a new chunk for each sheet and records the sheet', () => {
    const blocks: ParsedBlock[] = [
      { kind: 'table-row', text: 'a | 1', row: 1, header: 'k | v', sheet: 'One' },
      { kind: 'table-row', text: 'b | 2', row: 2, header: 'k | v', sheet: 'One' },
      { kind: 'table-row', text: 'x', row: 1, header: 'only', sheet: 'Two' },
    ];
    const chunks = chunkDocument(doc(blocks), { maxSize: 100, minSize: 0, overlap: 10 });
    expect(chunks.map((c) => [c.content, c.metadata])).toEqual([
      ['k | v\na | 1\nb | 2', { sheet: 'One', rows: [1, 2] }],
      ['only\nx', { sheet: 'Two', rows: [1, 1] }],
    ]);
  });

  it('records the page, or the page range when a chunk spans pages', () => {
    const [p1, p2, p3] = prose(31, 3, 3);
    const blocks: ParsedBlock[] = [
      { kind: 'text', text: p1, page: 1 }, { kind: 'text', text: p2, page: 2 }, { kind: 'text', text: p3, page: 3 },
    ];
    const whole = chunkDocument(doc(blocks), { maxSize: 1000, minSize: 0, overlap: 0 });
    expect(whole.map((c) => c.metadata)).toEqual([{ pages: [1, 3] }]);
    const small = chunkDocument(doc(blocks), { maxSize: 30, minSize: 0, overlap: 0 });
    expect(small[0].metadata).toEqual({ page: 1 });
    expect(small[small.length - 1].metadata).toEqual({ page: 3 });
    // With overlap, the first chunk of page 2 also holds the end of page 1.
    const overlapped = chunkDocument(doc(blocks), { maxSize: 30, minSize: 0, overlap: 10 });
    const firstOfPage2 = overlapped.find((c) => c.content.includes(p2.split(' ')[0]))!;
    expect(firstOfPage2.metadata).toEqual({ pages: [1, 2] });
  });

  it('merges a tiny trailing chunk into the previous one when the result fits', () => {
    const blocks: ParsedBlock[] = [
      { kind: 'heading', text: 'Guide', level: 1 },
      { kind: 'heading', text: 'Setup', level: 2 },
      { kind: 'text', text: 'Install the tool and configure it.' },
      { kind: 'heading', text: 'Thanks', level: 2 },
      { kind: 'text', text: 'Bye.' },
    ];
    const separate = chunkDocument(doc(blocks), { maxSize: 200, minSize: 0, overlap: 0 });
    expect(separate.map((c) => c.content)).toEqual(['Guide\n\nSetup\n\nInstall the tool and configure it.', 'Thanks\n\nBye.']);
    const merged = chunkDocument(doc(blocks), { maxSize: 200, minSize: 20, overlap: 0 });
    expect(merged).toHaveLength(1);
    expect(merged[0].content).toBe('Guide\n\nSetup\n\nInstall the tool and configure it.\n\nThanks\n\nBye.');
    expect(merged[0].metadata.headings).toEqual(['Guide']);
    expect(merged[0].tokenCount).toBe(tokenCount(merged[0].content));
    // No merge when the result would not fit.
    const tight = chunkDocument(doc(blocks), { maxSize: 14, minSize: 20, overlap: 0 });
    expect(tight.length).toBeGreaterThan(1);
    expectWithinLimits(tight, { maxSize: 14, minSize: 20, overlap: 0 });
  });

  it('never returns empty chunks and handles special-token text and blank blocks', () => {
    const chunks = chunkDocument(doc([...text('  ', 'Say <|endoftext|> literally.', '\n\n')]), { maxSize: 50, minSize: 0, overlap: 5 });
    expect(chunks.map((c) => c.content)).toEqual(['Say <|endoftext|> literally.']);
    expect(chunkDocument(doc([]), { maxSize: 50, minSize: 0, overlap: 5 })).toEqual([]);
  });

  it('holds its limits on random mixed documents', () => {
    const rand = random(99);
    for (let round = 0; round < 30; round++) {
      const blocks: ParsedBlock[] = [];
      const count = 1 + Math.floor(rand() * 30);
      for (let b = 0; b < count; b++) {
        const r = rand();
        if (r < 0.15) blocks.push({ kind: 'heading', text: `Heading ${round}-${b}`, level: 1 + Math.floor(rand() * 3) });
        else if (r < 0.25) blocks.push({ kind: 'code', text: Array.from({ length: 1 + Math.floor(rand() * 40) }, (_, i) => `line${i} = value${i};`).join('\n') });
        else if (r < 0.3) blocks.push({ kind: 'text', text: 'z'.repeat(1 + Math.floor(rand() * 2000)) });
        else blocks.push(...text(...prose(round * 100 + b, 1, 1 + Math.floor(rand() * 20))));
      }
      const maxSize = 8 + Math.floor(rand() * 300);
      const config = { maxSize, minSize: Math.floor(rand() * 300), overlap: Math.floor(rand() * maxSize) };
      const chunks = chunkDocument(doc(blocks), config);
      expectWithinLimits(chunks, config);
      const all = chunks.map((c) => c.content).join(' ');
      for (const block of blocks) for (const word of block.text.split(/\s+/)) {
        if (!/^z+$/.test(word)) expect(all.includes(word), `round ${round}: ${word}`).toBe(true);
      }
    }
  });

  it('chunks a large markdown-sized document', () => {
    const blocks: ParsedBlock[] = [];
    for (let i = 0; blocks.length < 20_000; i++) {
      blocks.push({ kind: 'heading', text: `Section ${i}`, level: 2 });
      blocks.push(...text(...prose(i, 3)));
    }
    const chunks = chunkDocument(doc(blocks), { maxSize: 512, minSize: 100, overlap: 64 });
    expect(chunks.length).toBeGreaterThan(1000);
    for (const chunk of chunks) expect(chunk.tokenCount).toBeLessThanOrEqual(512);
  });
});
