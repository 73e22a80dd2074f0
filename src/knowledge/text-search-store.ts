import type { Queryable } from '../db/database.js';
import type { WeightedTerm } from './ranking.js';
import { type ChunkHit, type ChunkSearch, vectorLiteral } from './store.js';
import { tagFilterSql } from './tag-filter-sql.js';

/**
 * The full-text leg of hybrid search: a BM25-like ranking over the chunks' `search_text` (English
 * tsvector, GIN index). PostgreSQL's ts_rank has no notion of how rare a word is, so a question's common
 * words ("release", "debian") would outweigh the one rare word that names the answer ("bookworm"); here
 * each query word is weighted by its inverse document frequency within the searched bases:
 *
 *  1. the query's lexemes (English stemming, stop words dropped, identifiers split at "_" and ".");
 *  2. each lexeme's document frequency, counted through the GIN index but capped (COMMON_DF), so that
 *     counting a very common word costs no more than counting a rare one: a word at the cap counts as
 *     common;
 *  3. candidates: chunks holding any word that is not common (all words when every one is common, then
 *     only chunks holding all of them), scored by sum(idf * ts_rank of that word), plus a bonus for each
 *     identifier of the query spelled out in order (identifierPhrases), best first.
 *
 * A query with no indexable word (only stop words or punctuation) finds nothing here.
 */

/** A word found in at least this many chunks of the searched bases is "common". */
const COMMON_DF = 500;
/** At most this many query words are used (the rarest are kept): bounds the work on long queries. */
const MAX_TERMS = 24;

export interface KeywordSearch extends ChunkSearch {
  query: string;
}

interface TermStat { term: string; df: number }

/** The query's lexemes with their (capped) document frequencies and the searched chunks' count. */
async function termStats(q: Queryable, s: KeywordSearch): Promise<{ terms: TermStat[]; total: number }> {
  const terms = await q.query<TermStat>(
    `SELECT t.term, (SELECT count(*)::int FROM (
              SELECT 1 FROM knowledge_chunks c
               WHERE c.knowledge_base_id = ANY($2::uuid[]) AND c.enabled AND c.search_text @@ quote_literal(t.term)::tsquery
               LIMIT ${COMMON_DF}) x) AS df
       FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS t(term)
      WHERE position('\\' in t.term) = 0`,
    [s.query, s.baseIds],
  );
  const counted = await q.query<{ n: number }>(
    `SELECT COALESCE(sum(chunk_count), 0)::int AS n FROM knowledge_documents
      WHERE knowledge_base_id = ANY($1::uuid[]) AND processing_status = 'completed' AND enabled`,
    [s.baseIds],
  );
  return { terms: terms.filter((t) => t.df > 0), total: Number(counted[0]?.n ?? 0) };
}

/** Okapi BM25's inverse document frequency: never negative, larger for rarer words. */
export function inverseDocumentFrequency(df: number, total: number): number {
  const n = Math.max(total, df);
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/**
 * Chunks matching the query's words, best BM25-like score first, with their vector distance; and the
 * query's words this ranking used with their inverse document frequencies, so that the passage rerank
 * (ranking.ts) weighs the same words alike on both databases.
 */
export async function keywordChunks(q: Queryable, s: KeywordSearch): Promise<{ hits: ChunkHit[]; terms: WeightedTerm[] }> {
  const { terms: all, total } = await termStats(q, s);
  if (all.length === 0) return { hits: [], terms: [] };
  const terms = [...all].sort((a, b) => a.df - b.df).slice(0, MAX_TERMS);
  const rare = terms.filter((t) => t.df < COMMON_DF);
  const matchAny = rare.length > 0;
  const candidates = (matchAny ? rare : terms).map((t) => quoteLexeme(t.term)).join(matchAny ? ' | ' : ' & ');
  const idf = new Map(terms.map((t) => [t.term, inverseDocumentFrequency(t.df, total)]));
  const phrases = identifierPhrases(s.query);
  const params: unknown[] = [
    vectorLiteral(s.embedding), s.baseIds, s.limit, candidates,
    terms.map((t) => t.term), terms.map((t) => idf.get(t.term) ?? 0),
    phrases, phrases.map((phrase) => phraseWeight(phrase, idf)),
  ];
  const filter = tagFilterSql(params, s.filters, s.tagFilters);
  const hits = await q.query<ChunkHit>(
    `SELECT c.document_id, c.chunk_index, c.knowledge_base_id, c.content, c.metadata, d.filename, d.source_url, d.tag_slots,
            (c.embedding::vector(${s.dimension})) <=> $1::vector(${s.dimension}) AS distance,
            (SELECT sum(w.idf * ts_rank(c.search_text, quote_literal(w.term)::tsquery, 1))
               FROM unnest($5::text[], $6::float8[]) AS w(term, idf))
          + COALESCE((SELECT sum(p.weight * ts_rank(c.search_text, phraseto_tsquery('english', p.phrase), 1))
               FROM unnest($7::text[], $8::float8[]) AS p(phrase, weight)), 0) AS text_score
       FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
      WHERE c.dimension = ${s.dimension} AND c.knowledge_base_id = ANY($2::uuid[]) AND c.enabled
        AND c.search_text @@ $4::tsquery${filter}
      ORDER BY text_score DESC, c.document_id, c.chunk_index
      LIMIT $3`,
    params,
  );
  return { hits, terms: terms.map((t) => ({ term: t.term, weight: idf.get(t.term) ?? 0 })) };
}

/**
 * Identifiers of the query ("asn1_get_length_der", "user.mime_type", "22.04", "text/plain"): the
 * full-text parser splits them into words, so each also counts as a phrase, its words adjacent and in
 * order, weighted as the mean of its words: the chunk that spells the identifier outranks chunks that merely
 * share its common parts.
 */
export function identifierPhrases(query: string): string[] {
  // Matched only from a word's first character: otherwise a long word with no separator is scanned again from
  // each of its characters (61 ms of the event loop for a 10,000-letter query). A match never starts mid-word
  // anyway: from any later character the word ends at the same place.
  const found = query.match(/(?<![\p{L}\p{N}])[\p{L}\p{N}]+(?:[_./:-][\p{L}\p{N}]+)+/gu) ?? [];
  return [...new Set(found)].slice(0, 8);
}

/** An identifier phrase weighs as the mean inverse document frequency of the query words it holds. */
function phraseWeight(phrase: string, idf: ReadonlyMap<string, number>): number {
  const words = phrase.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const weights = [...idf.entries()].filter(([term]) => words.some((w) => w.startsWith(term) || term.startsWith(w))).map(([, w]) => w);
  return weights.length === 0 ? 0 : weights.reduce((a, b) => a + b, 0) / weights.length;
}

/** A lexeme as a tsquery operand: quoted, so that it is taken as it is (no parsing, no stemming). */
const quoteLexeme = (term: string): string => `'${term.replace(/'/g, "''")}'`;
