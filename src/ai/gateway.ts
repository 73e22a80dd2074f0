import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { AiConfig } from '../config.js';
import type { AppContext } from '../context.js';
import type { Database } from '../db/database.js';
import type { AiPort, ChatRequest as PortChatRequest, ChatResponse as PortChatResponse } from '../engine/blocks/ai-port.js';
import { HttpError } from '../http/errors.js';
import { costNano, ModelCatalog, type ModelEntry } from './catalog.js';
import * as ledger from './credit-ledger.js';
import { AnthropicProvider } from './providers/anthropic.js';
import { GeminiProvider } from './providers/gemini.js';
import { createOpenAiProvider } from './providers/openai.js';
import { createOpenAiCompatibleProvider } from './providers/openai-compatible.js';
import {
  ProviderError,
  UnsupportedFeatureError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatMessage,
  type ChatRequest,
  type Provider,
  type ProviderName,
  type Usage,
} from './providers/types.js';

declare module '../context.js' {
  interface AreaServices {
    ai: AiGateway;
  }
}

/** Who pays for a request and where it came from. */
export interface Billing {
  /** 'workspace:<id>' or 'user:<id>'. */
  account: string;
  source: 'api' | 'workflow';
  httpRequestId?: string;
  workspaceId?: string | null;
  apiKeyId?: string | null;
}

export interface CompletionResult {
  completion: ChatCompletion;
  costNano: number;
  balanceAfterNano: number;
  model: ModelEntry;
}

export interface SettledStream {
  costNano: number;
  balanceAfterNano: number;
  usage: Usage;
  estimated: boolean;
}

/** A streaming completion whose deposit is reserved and whose first chunk has arrived. */
export interface StreamSession {
  id: string;
  model: ModelEntry;
  depositNano: number;
  balanceAfterReserveNano: number;
  /** Chunks in order (the first one included), ids and model rewritten to the gateway's. */
  chunks: AsyncIterable<ChatCompletionChunk>;
  /** Settles what was generated (or releases the deposit when nothing was); idempotent. */
  finish(outcome: 'completed' | 'aborted' | 'failed', error?: unknown): Promise<SettledStream>;
}

/** Images are not tokenized; this is the estimate per image part (a 1024x1024 tile set). */
const IMAGE_TOKENS = 1_100;
/** Texts longer than this are estimated by length (3 characters a token, generous) instead of tokenized. */
const TOKENIZE_LIMIT = 200_000;

// The tokenizer's ranks take about 75 MB: load them on the first request that needs them, so an
// instance that never uses the gateway does not carry them.
let countTokens: ((text: string) => number) | undefined;
function tokenCounter(): (text: string) => number {
  countTokens ??= (createRequire(import.meta.url)('gpt-tokenizer') as typeof import('gpt-tokenizer')).countTokens;
  return countTokens;
}

function estimateTextTokens(text: string): number {
  if (!text) return 0;
  if (text.length > TOKENIZE_LIMIT) return Math.ceil(text.length / 3);
  return tokenCounter()(text);
}

function contentTokens(content: ChatMessage['content']): number {
  if (typeof content === 'string') return estimateTextTokens(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (part.type === 'text' && typeof part.text === 'string') n += estimateTextTokens(part.text);
    else if (part.type === 'image_url') n += IMAGE_TOKENS;
    else n += estimateTextTokens(JSON.stringify(part));
  }
  return n;
}

/** Prompt tokens of a request, estimated with the o200k tokenizer (chat framing included). */
export function estimatePromptTokens(request: ChatRequest): number {
  let n = 3;
  for (const m of request.messages) {
    n += 4 + contentTokens(m.content);
    if (m.tool_calls) n += estimateTextTokens(JSON.stringify(m.tool_calls));
    if (m.name) n += 1;
  }
  if (request.tools && request.tools.length > 0) n += estimateTextTokens(JSON.stringify(request.tools)) + 10;
  if (request.response_format?.type === 'json_schema') n += estimateTextTokens(JSON.stringify(request.response_format.json_schema));
  return n;
}

function completionText(c: ChatCompletion): string {
  let s = '';
  for (const ch of c.choices) {
    if (typeof ch.message.content === 'string') s += ch.message.content;
    for (const t of ch.message.tool_calls ?? []) s += t.function.name + t.function.arguments;
  }
  return s;
}

const validUsage = (u: Usage | null | undefined): u is Usage =>
  Boolean(u) && Number.isFinite(u!.prompt_tokens) && Number.isFinite(u!.completion_tokens) && u!.prompt_tokens >= 0 && u!.completion_tokens >= 0;

export const newCompletionId = (): string => `chatcmpl-${randomBytes(15).toString('base64url')}`;

/** Maps a provider failure to the gateway's HTTP error (AI envelope). */
export function providerHttpError(err: ProviderError): HttpError {
  const who = `${err.provider} provider`;
  if (err.upstreamCode === 'cancelled') return new HttpError(499, 'The client closed the request', { type: 'invalid_request_error', code: 'cancelled' });
  if (err.status === 0) {
    const timeout = err.upstreamCode === 'provider_timeout';
    return new HttpError(timeout ? 504 : 502, err.message, { type: 'server_error', code: timeout ? 'provider_timeout' : 'provider_unavailable' });
  }
  if (err.status === 400 || err.status === 422 || err.status === 413) {
    return new HttpError(400, `The ${who} refused the request: ${err.message}`, { type: 'invalid_request_error', code: err.upstreamCode ?? null });
  }
  if (err.status === 429) return new HttpError(429, `The ${who} is rate limiting: ${err.message}`, { type: 'rate_limit_error', code: 'provider_rate_limited' });
  if (err.status === 404) return new HttpError(404, `The ${who} does not know this model: ${err.message}`, { type: 'invalid_request_error', code: 'model_not_found' });
  if (err.status === 401 || err.status === 403) {
    return new HttpError(502, `The ${who} rejected the gateway's credentials (${err.status}): ${err.message}`, { type: 'server_error', code: 'provider_auth_failed' });
  }
  return new HttpError(502, `The ${who} failed (${err.status}): ${err.message}`, { type: 'server_error', code: 'provider_error' });
}

export function buildProviders(ai: AiConfig): Map<ProviderName, Provider> {
  const m = new Map<ProviderName, Provider>();
  if (ai.openai.apiKey) m.set('openai', createOpenAiProvider(ai.openai.baseUrl, ai.openai.apiKey));
  if (ai.anthropic.apiKey) m.set('anthropic', new AnthropicProvider(ai.anthropic.baseUrl, ai.anthropic.apiKey));
  if (ai.gemini.apiKey) m.set('gemini', new GeminiProvider(ai.gemini.baseUrl, ai.gemini.apiKey));
  if (ai.openaiCompatible.baseUrl) m.set('openai-compatible', createOpenAiCompatibleProvider(ai.openaiCompatible.baseUrl, ai.openaiCompatible.apiKey));
  return m;
}

/**
 * The AI gateway service: routes a chat-completions request to its provider and bills it through
 * the credit ledger (reserve a deposit, call the provider outside any transaction, settle).
 */
export class AiGateway {
  readonly catalog: ModelCatalog;
  readonly providers: Map<ProviderName, Provider>;
  private readonly startingNano: number;
  private readonly minDepositNano: number;

  constructor(private readonly db: Database, private readonly ai: AiConfig) {
    this.providers = buildProviders(ai);
    const compat = this.providers.get('openai-compatible');
    this.catalog = new ModelCatalog(ai, compat?.listModels ? () => compat.listModels!() : undefined);
    this.startingNano = ledger.usdToNano(ai.startingCreditsUsd);
    this.minDepositNano = ledger.usdToNano(ai.minDepositUsd);
  }

  /** Finds the model (404) and checks the request's features against it (400). */
  async resolve(request: ChatRequest): Promise<{ model: ModelEntry; provider: Provider; maxTokens: number; clientSetMaxTokens: boolean }> {
    const model = await this.catalog.resolve(request.model);
    const provider = model && this.providers.get(model.provider);
    if (!model || !provider) {
      throw new HttpError(404, `The model '${request.model}' does not exist or is not available on this gateway`, { code: 'model_not_found', param: 'model' });
    }
    if (request.tools && request.tools.length > 0 && !model.tools) {
      throw new HttpError(400, `The model '${model.id}' does not support tools (function calling)`, { code: 'unsupported_feature', param: 'tools' });
    }
    if (request.response_format?.type === 'json_schema' && !model.jsonSchema) {
      throw new HttpError(400, `The model '${model.id}' does not support structured output (response_format json_schema)`, { code: 'unsupported_feature', param: 'response_format' });
    }
    if (request.stream && !model.streaming) {
      throw new HttpError(400, `The model '${model.id}' does not support streaming`, { code: 'unsupported_feature', param: 'stream' });
    }
    const clientMax = request.max_completion_tokens ?? request.max_tokens;
    return {
      model,
      provider,
      maxTokens: clientMax ?? model.defaultMaxTokens ?? this.ai.defaultMaxTokens,
      clientSetMaxTokens: clientMax !== undefined,
    };
  }

  /** Deposit for a request: estimated prompt cost plus the completion cap's cost, floored. */
  depositNano(request: ChatRequest, model: ModelEntry, maxTokens: number): number {
    if (model.inputPerMillion === 0 && model.outputPerMillion === 0) return 0;
    const prompt = estimatePromptTokens(request);
    const n = Math.max(1, request.n ?? 1);
    return Math.max(this.minDepositNano, costNano(model, Math.ceil(prompt * 1.1), maxTokens * n));
  }

  private async reserve(billing: Billing, id: string, model: ModelEntry, depositNano: number, stream: boolean): Promise<number> {
    const r = await ledger.reserve(this.db, {
      id, account: billing.account, depositNano, model: model.id, provider: model.provider, stream, source: billing.source,
      httpRequestId: billing.httpRequestId, workspaceId: billing.workspaceId, apiKeyId: billing.apiKeyId,
    }, this.startingNano);
    if (!r.ok) {
      throw new HttpError(
        402,
        `Insufficient credits: this request needs a deposit of $${ledger.formatUsd(depositNano)} and the balance of ${billing.account} is $${ledger.formatUsd(r.balanceNano)}. ` +
          'Lower max_tokens, or add credits (weft credits grant).',
        { type: 'insufficient_quota', code: 'insufficient_credits' },
      );
    }
    return r.balanceAfterNano;
  }

  private upstreamSignal(signal?: AbortSignal): AbortSignal {
    const timeout = AbortSignal.timeout(this.ai.timeoutMs);
    return signal ? AbortSignal.any([signal, timeout]) : timeout;
  }

  /** A whole (non-streaming) completion, billed. */
  async complete(billing: Billing, request: ChatRequest, signal?: AbortSignal): Promise<CompletionResult> {
    const { model, provider, maxTokens, clientSetMaxTokens } = await this.resolve(request);
    const id = newCompletionId();
    const deposit = this.depositNano(request, model, maxTokens);
    await this.reserve(billing, id, model, deposit, false);
    let completion: ChatCompletion;
    try {
      completion = await provider.complete(request, { upstreamModel: model.upstreamId, maxTokens, clientSetMaxTokens, signal: this.upstreamSignal(signal) });
    } catch (err) {
      await this.releaseQuietly(id, err);
      throw this.toHttpError(err);
    }
    let usage = completion.usage;
    let estimated = false;
    if (!validUsage(usage)) {
      const prompt = estimatePromptTokens(request);
      const completionTokens = estimateTextTokens(completionText(completion));
      usage = { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens };
      estimated = true;
    }
    const cost = costNano(model, usage.prompt_tokens, usage.completion_tokens);
    const settled = await ledger.settle(this.db, id, {
      costNano: cost, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, estimated, outcome: 'completed',
    });
    const out: ChatCompletion = {
      ...completion,
      id,
      object: 'chat.completion',
      created: typeof completion.created === 'number' ? completion.created : Math.floor(Date.now() / 1000),
      model: model.id,
      usage: { ...completion.usage, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    };
    return { completion: out, costNano: cost, balanceAfterNano: settled?.balanceAfterNano ?? 0, model };
  }

  /**
   * Starts a streaming completion: reserves the deposit and waits for the first chunk, so that a
   * provider refusing the request still becomes an ordinary HTTP error (deposit released).
   */
  async startStream(billing: Billing, request: ChatRequest, signal: AbortSignal): Promise<StreamSession> {
    const { model, provider, maxTokens, clientSetMaxTokens } = await this.resolve(request);
    const id = newCompletionId();
    const deposit = this.depositNano(request, model, maxTokens);
    const balanceAfterReserve = await this.reserve(billing, id, model, deposit, true);
    const created = Math.floor(Date.now() / 1000);
    let generated = '';
    let usage: Usage | undefined;
    let iterator: AsyncIterator<ChatCompletionChunk>;
    let first: IteratorResult<ChatCompletionChunk>;
    try {
      iterator = provider.stream(request, { upstreamModel: model.upstreamId, maxTokens, clientSetMaxTokens, signal: this.upstreamSignal(signal) })[Symbol.asyncIterator]();
      first = await iterator.next();
    } catch (err) {
      await this.releaseQuietly(id, err);
      throw this.toHttpError(err);
    }
    const rewrite = (c: ChatCompletionChunk): ChatCompletionChunk => {
      if (validUsage(c.usage)) usage = c.usage;
      for (const ch of c.choices) {
        if (typeof ch.delta.content === 'string') generated += ch.delta.content;
        for (const t of ch.delta.tool_calls ?? []) generated += (t.function?.name ?? '') + (t.function?.arguments ?? '');
      }
      c.id = id;
      c.object = 'chat.completion.chunk';
      c.created = created;
      c.model = model.id;
      return c;
    };
    async function* chunks(): AsyncGenerator<ChatCompletionChunk> {
      if (first.done) return;
      yield rewrite(first.value);
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        yield rewrite(next.value);
      }
    }
    let finished: Promise<SettledStream> | undefined;
    const finish = (outcome: 'completed' | 'aborted' | 'failed', error?: unknown): Promise<SettledStream> => {
      finished ??= (async () => {
        if (outcome !== 'completed') await iterator.return?.().catch(() => undefined);
        // Nothing generated and the provider failed: the request costs nothing.
        if (outcome === 'failed' && !generated && !usage) {
          const bal = await ledger.release(this.db, id, 'failed', error instanceof Error ? error.message : null);
          return { costNano: 0, balanceAfterNano: bal ?? balanceAfterReserve + deposit, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, estimated: false };
        }
        let estimated = false;
        let u = usage;
        if (!u) {
          const p = estimatePromptTokens(request);
          const c = estimateTextTokens(generated);
          u = { prompt_tokens: p, completion_tokens: c, total_tokens: p + c };
          estimated = true;
        }
        const cost = costNano(model, u.prompt_tokens, u.completion_tokens);
        const s = await ledger.settle(this.db, id, {
          costNano: cost, promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens, estimated, outcome,
        });
        return { costNano: cost, balanceAfterNano: s?.balanceAfterNano ?? balanceAfterReserve + deposit - cost, usage: u, estimated };
      })();
      return finished;
    };
    return { id, model, depositNano: deposit, balanceAfterReserveNano: balanceAfterReserve, chunks: chunks(), finish };
  }

  private async releaseQuietly(id: string, err: unknown): Promise<void> {
    const msg = err instanceof Error ? err.message : String(err);
    await ledger.release(this.db, id, 'failed', msg);
  }

  toHttpError(err: unknown): unknown {
    if (err instanceof ProviderError) return providerHttpError(err);
    if (err instanceof UnsupportedFeatureError) return new HttpError(400, err.message, { code: 'unsupported_feature', ...(err.param ? { param: err.param } : {}) });
    return err;
  }
}

/** The gateway of an app context, created on first use. */
export function gatewayOf(ctx: AppContext): AiGateway {
  ctx.services.ai ??= new AiGateway(ctx.db, ctx.config.ai);
  return ctx.services.ai;
}

/**
 * The engine's AI port for one workflow run: chat calls go through the gateway (same providers,
 * same catalog) and are billed to the run's account through the same ledger (source 'workflow').
 */
export function createAiPort(ctx: AppContext, billedAccount: string, workspaceId: string | null = null): AiPort {
  const gateway = gatewayOf(ctx);
  return {
    async chat(req: PortChatRequest): Promise<PortChatResponse> {
      const messages: ChatMessage[] = req.messages.map((m): ChatMessage => {
        switch (m.role) {
          case 'assistant':
            return {
              role: 'assistant',
              content: m.content,
              ...(m.toolCalls && m.toolCalls.length > 0
                ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }
                : {}),
            };
          case 'tool':
            return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
          default:
            return { role: m.role, content: m.content };
        }
      });
      const request: ChatRequest = { model: req.model, messages };
      if (req.temperature !== undefined) request.temperature = req.temperature;
      if (req.maxTokens !== undefined) request.max_tokens = req.maxTokens;
      if (req.tools && req.tools.length > 0) {
        request.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters } }));
        const tc = req.toolChoice;
        if (tc) request.tool_choice = typeof tc === 'string' ? tc : { type: 'function', function: { name: tc.name } };
      }
      if (req.responseSchema) {
        request.response_format = { type: 'json_schema', json_schema: { name: req.responseSchema.name, schema: req.responseSchema.schema, strict: false } };
      }
      let result: CompletionResult;
      try {
        result = await gateway.complete({ account: billedAccount, source: 'workflow', workspaceId }, request, req.signal);
      } catch (err) {
        if (err instanceof HttpError) throw new Error(`${req.model}: ${err.message}`);
        throw err;
      }
      const choice = result.completion.choices[0];
      const usage = result.completion.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
      return {
        content: typeof choice?.message.content === 'string' ? choice.message.content : null,
        toolCalls: (choice?.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
        finishReason: choice?.finish_reason ?? 'stop',
        usage: { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens },
        costUsd: ledger.nanoToUsd(result.costNano),
        model: result.model.id,
      };
    },
  };
}
