// How chunks are turned into text to embed and how ranked lists are merged: the two pure pieces of
// search quality, kept apart from the service's storage and job handling.
import type { ChunkHit } from './store.js';

/** Reciprocal rank fusion constant (the usual 60: damps the weight of the very first ranks). */
const RRF_K = 60;

/**
 * The text embedded for a chunk: its content, led by its heading path when the chunk does not start with
 * it, so that a passage deep in a section still carries what the section is about. The stored content
 * stays the verbatim excerpt.
 */
export function textToEmbed(chunk: { content: string; metadata: Record<string, unknown> }): string {
  const headings = chunk.metadata.headings;
  if (!Array.isArray(headings) || headings.length === 0) return chunk.content;
  const last = String(headings[headings.length - 1]);
  return chunk.content.startsWith(last) ? chunk.content : `${headings.map(String).join(' > ')}\n\n${chunk.content}`;
}

/** Reciprocal rank fusion: each list adds 1 / (k + rank) for every chunk it holds. */
export function fuseByRank(lists: readonly (readonly ChunkHit[])[]): ChunkHit[] {
  const scored = new Map<string, { hit: ChunkHit; score: number }>();
  for (const list of lists) {
    list.forEach((hit, rank) => {
      const key = `${hit.document_id}:${hit.chunk_index}`;
      const entry = scored.get(key) ?? { hit, score: 0 };
      entry.score += 1 / (RRF_K + rank + 1);
      scored.set(key, entry);
    });
  }
  return [...scored.values()].sort((a, b) => b.score - a.score || Number(a.hit.distance) - Number(b.hit.distance)).map((e) => e.hit);
}

