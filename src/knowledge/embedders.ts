/**
 * The embedders a Weft process offers. The local model always exists (knowledge bases created with it keep
 * working whatever is configured later); an OpenAI-compatible endpoint is added when the operator configures
 * one, and then it is the default for new knowledge bases. Existing knowledge bases find their embedder by
 * the model name recorded on them (`byModel`).
 */
import type { EmbedderSet } from './embedder.js';
import { HttpEmbedder } from './http-embedder.js';
import { LOCAL_EMBEDDING_MODEL, LocalEmbedder } from './local-embedder.js';

export type { EmbedderSet } from './embedder.js';

export interface EmbeddingsConfig {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  dimension?: number;
  /** Not used here: the knowledge service prices the `tokens` each call reports. */
  costPerMillionTokensUsd?: number;
}

/** Throws (at start-up) when the configuration is half there, rather than silently falling back to local. */
export function createEmbedders(cfg: EmbeddingsConfig, opts: { localIdleMs?: number } = {}): EmbedderSet {
  const local = new LocalEmbedder({ idleMs: opts.localIdleMs });
  let remote: HttpEmbedder | undefined;
  if (cfg.baseUrl || cfg.model) {
    if (!cfg.baseUrl) throw new Error('EMBEDDINGS_MODEL is set but EMBEDDINGS_BASE_URL is not');
    if (!cfg.model) throw new Error('EMBEDDINGS_BASE_URL is set but EMBEDDINGS_MODEL is not');
    if (cfg.model === LOCAL_EMBEDDING_MODEL) throw new Error(`EMBEDDINGS_MODEL may not be ${LOCAL_EMBEDDING_MODEL}, the built-in model's name`);
    remote = new HttpEmbedder({ baseUrl: cfg.baseUrl, apiKey: cfg.apiKey, model: cfg.model, dimension: cfg.dimension });
  }
  return {
    default: remote ?? local,
    byModel: (model) => (model === local.model ? local : model === remote?.model ? remote : undefined),
    close: async () => {
      await Promise.all([local.close(), remote?.close()]);
    },
  };
}
