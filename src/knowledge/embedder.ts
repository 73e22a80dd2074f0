/**
 * The embedding port: turns texts into vectors for the knowledge area. Two adapters implement it, the local
 * model in a worker thread (`local-embedder.ts`) and any OpenAI-compatible endpoint (`http-embedder.ts`).
 *
 * Every adapter returns unit-length vectors (see `normalize`). Ranking by cosine distance does not depend on
 * length, but unit vectors make cosine, inner product and L2 order agree, so a later switch of index operator
 * cannot change results, and vectors from providers that do not normalize are stored like the rest.
 */

export interface EmbeddingResult {
  vectors: number[][];
  /** tokens the provider billed (0 for the local model) */
  tokens: number;
}

export interface Embedder {
  /** Name recorded on knowledge bases, e.g. 'weft-local/use-lite-512' or the remote model name. */
  readonly model: string;
  /** Vector length; 0 for an HTTP embedder whose dimension is not configured and not yet learned. */
  readonly dimension: number;
  /** One vector per text, same order. Throws EmbeddingError on failure (an abort included). */
  embed(texts: string[], signal?: AbortSignal): Promise<EmbeddingResult>;
  close(): Promise<void>;
}

/** The embedders a process offers (built by `createEmbedders` in `embedders.ts`). */
export interface EmbedderSet {
  /** The embedder new knowledge bases use. */
  default: Embedder;
  /** The embedder for a model name recorded on a knowledge base; undefined when it is not configured here. */
  byModel(model: string): Embedder | undefined;
  close(): Promise<void>;
}

export class EmbeddingError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddingError';
  }
}

/**
 * Scales `v` to unit length (a new array). A zero vector has no direction and is returned unchanged: callers
 * storing it should know cosine distance to it is undefined (pgvector answers NaN).
 */
export function normalize(v: number[]): number[] {
  let sum = 0;
  for (const x of v) sum += x * x;
  if (sum === 0) return v.slice();
  const inv = 1 / Math.sqrt(sum);
  return v.map((x) => x * inv);
}
