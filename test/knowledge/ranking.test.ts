import { describe, expect, it } from 'vitest';
import { documentTitle, fuseByRank, fuseByScore, similarityFromDistance, textToEmbed } from '../../src/knowledge/ranking.js';
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
