import { describe, expect, it } from 'vitest';
import { fuseByRank, textToEmbed } from '../../src/knowledge/ranking.js';
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
