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
export function textToEmbed(chunk: { content: string; metadata: Record<string, unknown> }, title?: string): string {
  const headings = chunk.metadata.headings;
  const lead = title ? `${title}\n` : '';
  if (!Array.isArray(headings) || headings.length === 0) return title ? `${lead}\n${chunk.content}` : chunk.content;
  const last = String(headings[headings.length - 1]);
  return chunk.content.startsWith(last) ? `${lead}${lead && '\n'}${chunk.content}` : `${lead}${headings.map(String).join(' > ')}\n\n${chunk.content}`;
}

/**
 * A document's title as words, from its filename: the extension dropped, separators as spaces
 * ("ubuntu-releases.xlsx" -> "ubuntu releases"). Led into each chunk's embedded text and full-text
 * context, so that a question naming the document ("when was Debian bookworm released") finds a chunk
 * whose text never says it ("codename: Bookworm; release: 2023-06-10" in debian.csv).
 */
export function documentTitle(filename: string): string {
  return filename.replace(/\.[A-Za-z0-9]{1,5}$/, '').replace(/[-_.]+/g, ' ').trim();
}

/** The full-text context of a chunk: its document's title, the sheet and the heading path. */
export function chunkContext(chunk: { metadata: Record<string, unknown> }, title: string): string {
  const headings = Array.isArray(chunk.metadata.headings) ? chunk.metadata.headings.map(String) : [];
  const sheet = typeof chunk.metadata.sheet === 'string' ? [chunk.metadata.sheet] : [];
  return [title, ...sheet, ...headings].join('\n');
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


/**
 * Hybrid fusion by score: each candidate's vector similarity, scaled to [0, 1] over the candidates
 * (min-max), and its full-text score, scaled by the best one, mixed half and half. Unlike rank fusion
 * this keeps how decisive a leg is: one rare word that only one chunk holds ("bookworm") lifts that chunk
 * above chunks that merely appear in both lists. Every candidate has a vector distance (the full-text
 * leg reports it too); a chunk the full-text leg did not return scores 0 there.
 */
export function fuseByScore(vectorHits: readonly ChunkHit[], textHits: readonly ChunkHit[], vectorWeight = 0.5): ChunkHit[] {
  const all = new Map<string, ChunkHit>();
  for (const hit of [...vectorHits, ...textHits]) {
    const key = `${hit.document_id}:${hit.chunk_index}`;
    const seen = all.get(key);
    all.set(key, seen ? { ...seen, text_score: hit.text_score ?? seen.text_score } : hit);
  }
  const hits = [...all.values()];
  if (hits.length === 0) return [];
  const similarity = hits.map((h) => 1 - Number(h.distance));
  const low = Math.min(...similarity);
  const span = Math.max(...similarity) - low;
  const bestText = Math.max(0, ...hits.map((h) => Number(h.text_score ?? 0)));
  const scored = hits.map((hit, i) => ({
    hit,
    score: vectorWeight * (span > 0 ? ((similarity[i] as number) - low) / span : 1)
      + (1 - vectorWeight) * (bestText > 0 ? Number(hit.text_score ?? 0) / bestText : 0),
  }));
  return scored.sort((a, b) => b.score - a.score || Number(a.hit.distance) - Number(b.hit.distance)).map((e) => e.hit);
}

/** Cosine distance runs from 0 to 2; the contract's similarity is 1 minus it, kept in [0, 1]. */
export function similarityFromDistance(distance: number): number {
  return Math.min(1, Math.max(0, 1 - distance));
}
