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


/** A chunk with its score from hybrid fusion (a weighted sum in [0, 1]). */
export interface ScoredHit {
  hit: ChunkHit;
  score: number;
}

/**
 * Hybrid fusion by score: each candidate's vector similarity, scaled to [0, 1] over the candidates
 * (min-max), and its full-text score, scaled by the best one, mixed half and half. Unlike rank fusion
 * this keeps how decisive a leg is: one rare word that only one chunk holds ("bookworm") lifts that chunk
 * above chunks that merely appear in both lists. Every candidate has a vector distance (the full-text
 * leg reports it too); a chunk the full-text leg did not return scores 0 there. Best first.
 */
export function fuseScored(vectorHits: readonly ChunkHit[], textHits: readonly ChunkHit[], vectorWeight = 0.5): ScoredHit[] {
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
  return scored.sort(byScoreThenDistance);
}

/** `fuseScored` without the scores. */
export function fuseByScore(vectorHits: readonly ChunkHit[], textHits: readonly ChunkHit[], vectorWeight = 0.5): ChunkHit[] {
  return fuseScored(vectorHits, textHits, vectorWeight).map((e) => e.hit);
}

const byScoreThenDistance = (a: ScoredHit, b: ScoredHit): number => b.score - a.score || Number(a.hit.distance) - Number(b.hit.distance);

/** A query word as the full-text leg normalised it (an English lexeme such as "releas" or "22.04"), with its weight (idf). */
export interface WeightedTerm {
  term: string;
  weight: number;
}

/** How the passage rerank weighs a chunk's own wording against the fused score; see `rerankPassages`. */
export interface PassageRerankOptions {
  /** Weight of the passage score added to the fused score (both in [0, 1]). */
  passageWeight: number;
  /** Words of the window in which query words count as occurring together. */
  window: number;
}

export const PASSAGE_RERANK_DEFAULTS: PassageRerankOptions = { passageWeight: 0.5, window: 12 };

/**
 * The passage rerank (docs/architecture.md, Knowledge ingest): fusion decides which documents answer, but
 * within a long document several chunks share the question's words, and the one that holds the answer
 * is the one where the question's rarer words occur together. Each candidate gets a passage score in
 * [0, 1] (`passageScore`), added to its fused score with `passageWeight`; ties keep the fused order.
 * Without query words (the full-text leg found none, or failed) the fused order is kept as it is.
 */
export function rerankPassages(
  candidates: readonly ScoredHit[], terms: readonly WeightedTerm[], options: PassageRerankOptions = PASSAGE_RERANK_DEFAULTS,
): ChunkHit[] {
  if (terms.length === 0 || options.passageWeight <= 0) return candidates.map((c) => c.hit);
  const matchers = terms.map(termMatcher);
  // Query words that name the document ("html-to-text", "debian") are in every chunk's full-text context
  // already and tell its chunks nothing apart: each chunk is scored on the other words.
  const byTitle = new Map<string, TermMatcher[]>();
  const matchersFor = (filename: string): TermMatcher[] => {
    let found = byTitle.get(filename);
    if (!found) {
      const title = wordsOf(documentTitle(filename));
      found = matchers.filter((m) => !title.some((_, at) => occursAt(title, at, m)));
      byTitle.set(filename, found);
    }
    return found;
  };
  return candidates
    .map((c, order) => ({ hit: c.hit, order, score: c.score + options.passageWeight * passageScoreOf(c.hit.content, matchersFor(c.hit.filename), options.window) }))
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .map((c) => c.hit);
}

/**
 * How well a chunk's text covers the query, in [0, 1]: the mean of
 *  - coverage: the weight of the distinct query words the chunk holds, over the weight of all of them;
 *  - density: the same, counting only the words that occur within one window of `window` words, the
 *    best window of the chunk (a table row, a sentence: where an answer sits beside what was asked).
 * Query words are weighted by their inverse document frequency, so "bookworm" counts for more than "release".
 */
export function passageScore(content: string, terms: readonly WeightedTerm[], window = PASSAGE_RERANK_DEFAULTS.window): number {
  return passageScoreOf(content, terms.map(termMatcher), window);
}

interface TermMatcher {
  weight: number;
  /** The lexeme without separators ("22.04" -> "2204", "mime.cache" -> "mimecache"). */
  key: string;
  /** How many consecutive words of the text may spell it together ("error description", "errorDescription"). */
  span: number;
  /** Short lexemes and numbers match only whole. */
  whole: boolean;
}

function termMatcher(term: WeightedTerm): TermMatcher {
  const parts = term.term.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const key = parts.join('');
  // A compound lexeme is spelled by its parts; a long single lexeme may be a run-together identifier
  // (the parser keeps "errorDescription" whole, so it stems to "errordescript").
  return {
    weight: Math.max(0, term.weight), key, span: parts.length > 1 ? parts.length + 1 : key.length >= 6 ? 3 : 1,
    whole: key.length < 3 || /^\p{N}+$/u.test(key),
  };
}

/** A text's words, lower case: split at anything that is not a letter or digit, and at camelCase humps. */
const wordsOf = (text: string): string[] =>
  (text.replace(/(\p{Ll})(\p{Lu})/gu, '$1 $2').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);

/**
 * Whether a word (or words run together) of the text is a form of a lexeme: the full-text stemmer keeps
 * a word's stem, so "released" and "releases" stem to "releas", "woody" to "woodi". Short lexemes and
 * numbers must match whole ("l" is not "list", "10" is not "100").
 */
function formOf(word: string, m: TermMatcher): boolean {
  const lexeme = m.key;
  if (word === lexeme) return true;
  if (m.whole || word.length < lexeme.length || !word.startsWith(lexeme.slice(0, -1))) return false;
  if (word.startsWith(lexeme)) return word.length - lexeme.length <= 4;
  // The stemmer writes a final "y" as "i": "woody" -> "woodi", "library" -> "librari".
  return lexeme.endsWith('i') && word[lexeme.length - 1] === 'y' && word.length - lexeme.length <= 3;
}

/** Whether the query word occurs at `at`: one word, or up to `span` words run together. */
function occursAt(words: readonly string[], at: number, m: TermMatcher): boolean {
  let joined = '';
  for (let k = 0; k < m.span && at + k < words.length; k++) {
    joined += words[at + k] as string;
    if (formOf(joined, m)) return true;
    if (joined.length >= m.key.length + 4) return false;
  }
  return false;
}

function passageScoreOf(content: string, matchers: readonly TermMatcher[], window: number): number {
  const total = matchers.reduce((n, m) => n + m.weight, 0);
  if (total <= 0) return 0;
  const words = wordsOf(content);
  // Every occurrence of a query word: its position and which query word it is.
  const hits: { at: number; term: number }[] = [];
  matchers.forEach((m, term) => {
    if (m.key === '') return;
    for (let at = 0; at < words.length; at++) if (occursAt(words, at, m)) hits.push({ at, term });
  });
  if (hits.length === 0) return 0;
  hits.sort((a, b) => a.at - b.at);

  const weightOf = (present: Set<number>): number => [...present].reduce((n, t) => n + (matchers[t] as TermMatcher).weight, 0);
  const coverage = weightOf(new Set(hits.map((h) => h.term)));
  // Densest window: for each occurrence, the distinct query words from it to `window` words on.
  let densest = 0;
  for (let i = 0; i < hits.length; i++) {
    const start = (hits[i] as { at: number }).at;
    const present = new Set<number>();
    for (let j = i; j < hits.length && (hits[j] as { at: number }).at < start + window; j++) present.add((hits[j] as { term: number }).term);
    densest = Math.max(densest, weightOf(present));
  }
  return (coverage + densest) / (2 * total);
}

/**
 * The reference's cutoff on the vector ranking (sim-api 10.4, step 6): a chunk is a vector hit only when its
 * cosine distance to the query is below 1.0 when at most 3 bases are searched, below 0.8 when more (a wider
 * search keeps only the closer chunks). A chunk at distance 1 or more points nowhere near the question.
 */
export function vectorDistanceCutoff(baseCount: number): number {
  return baseCount <= 3 ? 1.0 : 0.8;
}

/**
 * The vector hits within the cutoff. The hits come nearest first, so dropping the far ones after the LIMIT
 * keeps exactly the chunks a cutoff inside the query would (and spares the index scan from looking on for
 * near chunks that are not there).
 */
export function withinDistance<T extends Pick<ChunkHit, 'distance'>>(hits: readonly T[], cutoff: number): T[] {
  return hits.filter((h) => Number(h.distance) < cutoff);
}

/** Cosine distance runs from 0 to 2; the contract's similarity is 1 minus it, kept in [0, 1]. */
export function similarityFromDistance(distance: number): number {
  return Math.min(1, Math.max(0, 1 - distance));
}
