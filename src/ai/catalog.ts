import { z } from 'zod';
import type { AiConfig } from '../config.js';
import type { ProviderName } from './providers/types.js';

/** A model the gateway can route: its provider, its prices per million tokens and what it supports. */
export interface ModelEntry {
  /** The slug callers use. */
  id: string;
  provider: ProviderName;
  /** The id the provider knows (defaults to the slug). */
  upstreamId: string;
  /** USD per million prompt tokens. */
  inputPerMillion: number;
  /** USD per million completion tokens. */
  outputPerMillion: number;
  tools: boolean;
  jsonSchema: boolean;
  streaming: boolean;
  /** Completion tokens reserved and sent upstream when a request sets no max_tokens. */
  defaultMaxTokens?: number;
  /** Unix seconds shown in the model list. */
  created: number;
}

type Row = [id: string, input: number, output: number, created: number, defaultMaxTokens?: number];

// List prices in USD per million tokens (standard tier, prompts up to 200k tokens where tiered).
const openaiModels: Row[] = [
  ['gpt-4o', 2.5, 10, 1715367049],
  ['gpt-4o-mini', 0.15, 0.6, 1721172741],
  ['gpt-4.1', 2, 8, 1744316542],
  ['gpt-4.1-mini', 0.4, 1.6, 1744318173],
  ['gpt-4.1-nano', 0.1, 0.4, 1744321707],
  ['o3', 2, 8, 1744225308, 16384],
  ['o4-mini', 1.1, 4.4, 1744225351, 16384],
  ['gpt-5', 1.25, 10, 1754425777, 16384],
  ['gpt-5-mini', 0.25, 2, 1754425867, 16384],
  ['gpt-5-nano', 0.05, 0.4, 1754426384, 16384],
];
const anthropicModels: Row[] = [
  ['claude-opus-4-1', 15, 75, 1754352000],
  ['claude-opus-4-0', 15, 75, 1747699200],
  ['claude-sonnet-4-5', 3, 15, 1759104000],
  ['claude-sonnet-4-0', 3, 15, 1747699200],
  ['claude-3-7-sonnet-latest', 3, 15, 1740355200],
  ['claude-haiku-4-5', 1, 5, 1760572800],
  ['claude-3-5-haiku-latest', 0.8, 4, 1729555200],
];
const geminiModels: Row[] = [
  ['gemini-2.5-pro', 1.25, 10, 1750118400, 16384],
  ['gemini-2.5-flash', 0.3, 2.5, 1750118400, 16384],
  ['gemini-2.5-flash-lite', 0.1, 0.4, 1753142400],
  ['gemini-2.0-flash', 0.1, 0.4, 1738713600],
  ['gemini-2.0-flash-lite', 0.075, 0.3, 1738713600],
];

const builtIn = (provider: ProviderName, rows: Row[]): ModelEntry[] =>
  rows.map(([id, input, output, created, defaultMaxTokens]) => ({
    id, provider, upstreamId: id, inputPerMillion: input, outputPerMillion: output,
    tools: true, jsonSchema: true, streaming: true, created, ...(defaultMaxTokens ? { defaultMaxTokens } : {}),
  }));

export const BUILT_IN_MODELS: readonly ModelEntry[] = [
  ...builtIn('openai', openaiModels),
  ...builtIn('anthropic', anthropicModels),
  ...builtIn('gemini', geminiModels),
];

/** One entry of WEFT_AI_MODELS: adds a model or overrides a built-in one (prices, capabilities). */
export const extraModelSchema = z.object({
  id: z.string().min(1).max(200),
  provider: z.enum(['openai', 'anthropic', 'gemini', 'openai-compatible']),
  upstreamId: z.string().min(1).max(200).optional(),
  inputPerMillion: z.number().min(0).max(100_000).default(0),
  outputPerMillion: z.number().min(0).max(100_000).default(0),
  tools: z.boolean().default(true),
  jsonSchema: z.boolean().default(true),
  streaming: z.boolean().default(true),
  defaultMaxTokens: z.number().int().min(1).max(1_000_000).optional(),
}).strict();

export function parseExtraModels(raw: string | undefined): ModelEntry[] {
  if (!raw) return [];
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error('WEFT_AI_MODELS must be a JSON array of model entries');
  }
  const parsed = z.array(extraModelSchema).safeParse(json);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new Error(`WEFT_AI_MODELS: ${i.path.join('.')}: ${i.message}`);
  }
  return parsed.data.map((m) => ({ ...m, upstreamId: m.upstreamId ?? m.id, created: 0 }));
}

export const providerConfigured = (ai: AiConfig, p: ProviderName): boolean => {
  switch (p) {
    case 'openai':
      return Boolean(ai.openai.apiKey);
    case 'anthropic':
      return Boolean(ai.anthropic.apiKey);
    case 'gemini':
      return Boolean(ai.gemini.apiKey);
    case 'openai-compatible':
      return Boolean(ai.openaiCompatible.baseUrl);
  }
};

/** How each provider is switched on: its display name and the variables that configure it. */
const PROVIDER_SETUP: Record<ProviderName, { label: string; how: string }> = {
  openai: { label: 'an OpenAI model', how: 'set OPENAI_API_KEY (and OPENAI_BASE_URL for a proxy)' },
  anthropic: { label: 'an Anthropic model', how: 'set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a proxy)' },
  gemini: { label: 'a Google Gemini model', how: 'set GEMINI_API_KEY (and GEMINI_BASE_URL for a proxy)' },
  'openai-compatible': { label: 'a model of an OpenAI-compatible server', how: 'set OPENAI_COMPATIBLE_BASE_URL to a server that lists it' },
};

/** Models named in an unknown-model message before "and N more". */
const LISTED_MODELS = 20;

/** USD cost of a usage at a model's prices. */
export function costUsd(model: Pick<ModelEntry, 'inputPerMillion' | 'outputPerMillion'>, promptTokens: number, completionTokens: number): number {
  return (promptTokens * model.inputPerMillion + completionTokens * model.outputPerMillion) / 1_000_000;
}

/** Cost in nano-USD (the ledger's unit), rounded up to a whole nano-dollar. */
export function costNano(model: Pick<ModelEntry, 'inputPerMillion' | 'outputPerMillion'>, promptTokens: number, completionTokens: number): number {
  // price per million USD * tokens * 1000 = nano-USD; prices have at most a few decimals, so round
  // away float noise before taking the ceiling.
  const exact = promptTokens * model.inputPerMillion * 1000 + completionTokens * model.outputPerMillion * 1000;
  return Math.ceil(Math.round(exact * 1000) / 1000);
}

/**
 * The models of the configured providers: built-in entries, WEFT_AI_MODELS entries and the
 * models an OpenAI-compatible server lists (cached briefly, price 0 unless configured).
 */
export class ModelCatalog {
  private readonly byId = new Map<string, ModelEntry>();
  /** Every built-in and configured entry, its provider configured or not (a workspace may bring the key). */
  private readonly everyEntry = new Map<string, ModelEntry>();
  private compatCache: { ids: string[]; until: number } | undefined;
  private compatLoading: Promise<string[]> | undefined;

  constructor(
    private readonly ai: AiConfig,
    private readonly listCompat?: () => Promise<string[]>,
    private readonly compatTtlMs = 60_000,
  ) {
    for (const m of [...BUILT_IN_MODELS, ...parseExtraModels(ai.extraModels)]) {
      this.everyEntry.set(m.id, m);
      if (!providerConfigured(ai, m.provider)) continue;
      this.byId.set(m.id, m);
    }
  }

  /** A built-in or WEFT_AI_MODELS entry whether or not its provider is configured here. */
  builtIn(id: string): ModelEntry | undefined {
    return this.everyEntry.get(id);
  }

  /** The entry for a slug, or undefined when no configured provider offers it. */
  async resolve(id: string): Promise<ModelEntry | undefined> {
    const known = this.byId.get(id);
    if (known) return known;
    if (!this.listCompat) return undefined;
    const ids = await this.compatIds();
    return ids.includes(id) ? this.compatEntry(id) : undefined;
  }

  async list(): Promise<ModelEntry[]> {
    const out = [...this.byId.values()];
    if (this.listCompat) {
      for (const id of await this.compatIds()) if (!this.byId.has(id)) out.push(this.compatEntry(id));
    }
    return out;
  }

  /**
   * Why a slug is not served and what to do about it: the provider to configure when the slug is a
   * known model of an unconfigured provider, otherwise the general ways to add one; then the models
   * that are configured.
   */
  async explainUnknown(id: string): Promise<string> {
    const parts = [`The model '${id}' does not exist or is not available on this gateway.`];
    const known = [...BUILT_IN_MODELS, ...parseExtraModels(this.ai.extraModels)].find((m) => m.id === id);
    const named = known !== undefined && !providerConfigured(this.ai, known.provider);
    if (known && named) {
      const setup = PROVIDER_SETUP[known.provider];
      parts.push(`It is ${setup.label}, whose provider is not configured: ${setup.how}.`);
    } else {
      parts.push('To serve it, set OPENAI_COMPATIBLE_BASE_URL to a server that lists it (Ollama, vLLM, LM Studio, OpenRouter), '
        + 'or add it to WEFT_AI_MODELS with its provider.');
    }
    const ids = (await this.list().catch(() => [...this.byId.values()])).map((m) => m.id);
    if (ids.length === 0) {
      parts.push(named ? 'No other provider is configured yet.'
        : 'No provider is configured yet: set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or OPENAI_COMPATIBLE_BASE_URL.');
    } else {
      const more = ids.length > LISTED_MODELS ? ` and ${ids.length - LISTED_MODELS} more (GET /api/v1/ai/models lists them all)` : '';
      parts.push(`Configured models: ${ids.slice(0, LISTED_MODELS).join(', ')}${more}.`);
    }
    return parts.join(' ');
  }

  private compatEntry(id: string): ModelEntry {
    return { id, provider: 'openai-compatible', upstreamId: id, inputPerMillion: 0, outputPerMillion: 0, tools: true, jsonSchema: true, streaming: true, created: 0 };
  }

  private async compatIds(): Promise<string[]> {
    const now = Date.now();
    if (this.compatCache && this.compatCache.until > now) return this.compatCache.ids;
    this.compatLoading ??= (async () => {
      try {
        const ids = await this.listCompat!();
        this.compatCache = { ids, until: Date.now() + this.compatTtlMs };
        return ids;
      } catch {
        // An unreachable server lists nothing; ask again soon, not on every request.
        const ids = this.compatCache?.ids ?? [];
        this.compatCache = { ids, until: Date.now() + Math.min(5_000, this.compatTtlMs) };
        return ids;
      } finally {
        this.compatLoading = undefined;
      }
    })();
    return this.compatLoading;
  }
}
