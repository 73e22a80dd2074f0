import { describe, expect, it } from 'vitest';
import { documentTitle, fuseByRank, fuseByScore, passageScore, rerankPassages, similarityFromDistance, textToEmbed } from '../../src/knowledge/ranking.js';
import type { ChunkHit } from '../../src/knowledge/store.js';

const hit = (doc: string, distance: number): ChunkHit => ({
  document_id: doc, chunk_index: 0, knowledge_base_id: 'kb', filename: `${doc}.md`, source_url: null, content: doc, metadata: {}, distance,
});

describe('fuseByRank (reciprocal rank fusion)', () => {
  it('ranks a chunk both lists hold above chunks only one list ranks first', () => {
    const vector = [hit('a', 0.1), hit('both', 0.2), hit('c', 0.3)];
    const keyword = [hit('k', 0.9), hit('both', 0.2)];
    expect(fuseByRank([vector, keyword]).map((h) => h.document_id)).toEqual(['both', 'a', 'k', 'c']);
  });

  it('breaks equal scores by vector distance and keeps each chunk once', () => {
    const fused = fuseByRank([[hit('far', 0.8)], [hit('near', 0.1)]]);
    expect(fused.map((h) => h.document_id)).toEqual(['near', 'far']);
  });
});

describe('textToEmbed', () => {
  it('leads a chunk with its heading path unless the chunk starts with its own heading', () => {
    expect(textToEmbed({ content: 'Body text.', metadata: { headings: ['Guide', 'Install'] } })).toBe('Guide > Install\n\nBody text.');
    expect(textToEmbed({ content: 'Install\n\nBody text.', metadata: { headings: ['Guide', 'Install'] } })).toBe('Install\n\nBody text.');
    expect(textToEmbed({ content: 'Plain.', metadata: {} })).toBe('Plain.');
  });
});

describe('similarityFromDistance', () => {
  it('is 1 minus the cosine distance, kept in [0, 1] for opposite vectors', () => {
    expect(similarityFromDistance(0.25)).toBe(0.75);
    expect(similarityFromDistance(1.4)).toBe(0);
    expect(similarityFromDistance(-1e-9)).toBe(1);
  });
});

describe('fuseByScore', () => {
  const h = (id: string, distance: number, textScore?: number) => ({ ...hit(id, distance), text_score: textScore });
  it('lets one decisive full-text match outrank chunks that are merely in both lists', () => {
    const vector = [h('near', 0.3), h('middle', 0.4), h('rare-word', 0.5), h('far', 0.7)];
    const text = [h('rare-word', 0.5, 9), h('near', 0.3, 1), h('middle', 0.4, 1)];
    expect(fuseByScore(vector, text).map((x) => x.document_id)).toEqual(['rare-word', 'near', 'middle', 'far']);
    // Rank fusion would have put the chunk the vector leg ranked first ahead.
    expect(fuseByRank([vector, text])[0]?.document_id).toBe('near');
  });

  it('orders by similarity alone when the full-text leg found nothing', () => {
    expect(fuseByScore([h('a', 0.2), h('b', 0.5)], []).map((x) => x.document_id)).toEqual(['a', 'b']);
    expect(fuseByScore([], [])).toEqual([]);
  });
});

describe('documentTitle', () => {
  it('turns a filename into words', () => {
    expect(documentTitle('ubuntu-releases.xlsx')).toBe('ubuntu releases');
    expect(documentTitle('users_and.groups.html')).toBe('users and groups');
  });
});

describe('passageScore', () => {
  const terms = [{ term: 'bookworm', weight: 4 }, { term: 'releas', weight: 2 }, { term: '22.04', weight: 4 }];

  it('is 1 when every query word stands within one window, less when they are apart, 0 without any', () => {
    expect(passageScore('Bookworm was released on 22.04 of that year', terms)).toBe(1);
    const apart = `Bookworm ${'filler '.repeat(30)} released ${'filler '.repeat(30)} 22.04`;
    expect(passageScore(apart, terms)).toBeCloseTo((1 + 0.4) / 2);
    expect(passageScore('nothing relevant here', terms)).toBe(0);
  });

  it('weighs rare words more, matches stemmed forms, identifiers run together and camelCase, and short words only whole', () => {
    expect(passageScore('bookworm', terms)).toBeGreaterThan(passageScore('releases', terms));
    expect(passageScore('the woody release', [{ term: 'woodi', weight: 1 }])).toBe(1);
    expect(passageScore('set errorDescription first', [{ term: 'errordescript', weight: 1 }])).toBe(1);
    expect(passageScore('ASN1_MAX_ERROR_DESCRIPTION_SIZE', [{ term: 'errordescript', weight: 1 }])).toBe(1);
    expect(passageScore('keep uppercaseHeadings off', [{ term: 'uppercas', weight: 1 }, { term: 'head', weight: 1 }])).toBe(1);
    expect(passageScore('a list of 100 items', [{ term: 'l', weight: 1 }, { term: '10', weight: 1 }])).toBe(0);
  });
});

describe('rerankPassages', () => {
  const scored = (doc: string, index: number, score: number, content: string) => ({
    hit: { ...hit(doc, 0.5), chunk_index: index, filename: `${doc}.md`, content }, score,
  });
  const question = [{ term: 'lisbon', weight: 3 }, { term: 'support', weight: 2 }, { term: 'engin', weight: 2 }];

  it('brings forward the chunk where the question words stand together, within what fusion ranked close', () => {
    const scattered = scored('staff', 1, 0.9, `Lisbon office. ${'Other rows. '.repeat(10)} Support engineers work in Madrid.`);
    const together = scored('staff', 2, 0.8, 'Eva Lopes, support engineer in Lisbon, started in 2021.');
    const unrelated = scored('menu', 0, 0.85, 'Soup of the day.');
    expect(rerankPassages([scattered, unrelated, together], question).map((h) => h.chunk_index)).toEqual([2, 1, 0]);
  });

  it('keeps the fused order when the fused scores are far apart, or without query words', () => {
    const far = [scored('a', 0, 0.95, 'nothing here'), scored('b', 1, 0.2, 'support engineer in Lisbon')];
    expect(rerankPassages(far, question).map((h) => h.document_id)).toEqual(['a', 'b']);
    const close = [scored('a', 0, 0.5, 'x'), scored('b', 1, 0.5, 'support engineer in Lisbon')];
    expect(rerankPassages(close, []).map((h) => h.document_id)).toEqual(['a', 'b']);
  });

  it('does not count query words that name the chunk\'s own document', () => {
    // "lisbon" names lisbon.md: its chunks are told apart by the other words only.
    const own = [scored('lisbon', 0, 0.5, 'Lisbon Lisbon Lisbon'), scored('lisbon', 1, 0.5, 'support engineer')];
    expect(rerankPassages(own, question).map((h) => h.chunk_index)).toEqual([1, 0]);
  });
});
