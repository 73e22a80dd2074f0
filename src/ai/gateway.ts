import type { Logger } from 'pino';
import type { AiConfig } from '../config.js';
import type { Database } from '../db/database.js';
import type { AiPort } from '../engine/blocks/ai-port.js';
import { HttpError } from '../http/errors.js';
import { newTimeOrderedToken } from '../ids.js';
import { deadline } from '../net/deadline.js';
import type { UsageRecorder } from '../limits/usage.js';
import type { AiObserver } from '../observability/observer.js';
import { createAiPort } from './ai-port.js';
import type { Billing, CompletionResult, KeySource } from './completion.js';
import { costNano, ModelCatalog, type ModelEntry } from './catalog.js';
import { getBalance, listLedger, requestLedger, type LedgerRow, type RequestLedger } from './credit-ledger.js';
import { toHttpError } from './errors.js';
import { formatUsd, nanoToUsd, usdToNano } from './money.js';
import { buildProviders, providerWithKey } from './providers/index.js';
import type { ChatChoice, ChatCompletion, ChatCompletionChunk, ChatRequest, Provider, ProviderName, ToolCall, Usage } from './providers/types.js';
import { textOf } from './providers/upstream.js';
import { OffThreadTokenCounter, type TokenCounter } from './token-counter.js';
import { completionText, depositPromptTokens, estimatePromptTokens, estimateTextTokens, GeneratedText, validUsage } from './tokens.js';

export interface SettledStream {
  /** What was charged: the cost, at most the deposit. */
  costNano: number;
  overageNano: number;
  balanceAfterNano: number;
  usage: Usage;
  estimated: boolean;
}

/** A streaming completion whose deposit is reserved and whose first chunk has arrived. */
export interface StreamSession {
  id: string;
  keySource: KeySource;
  model: ModelEntry;
  depositNano: number;
  balanceAfterReserveNano: number;
  /** Chunks in order (the first one included), ids and model rewritten to the gateway's. */
  chunks: AsyncIterable<ChatCompletionChunk>;
  /** Settles what was generated (or releases the deposit when nothing was); idempotent. */
  finish(outcome: 'completed' | 'aborted' | 'failed', error?: unknown): Promise<SettledStream>;
}

/** What the gateway needs besides its database and configuration (handed in by the composition root). */
export interface AiGatewayDeps {
  /** Usage accounting (the limits service's): billing periods of the usage events settlements write. */
  usage?: UsageRecorder;
  log?: Logger;
  /** Told of each settled call's tokens and cost (metrics). */
  observer?: AiObserver;
  /** Default: the providers configured in `config` (tests may hand in others). */
  providers?: Map<ProviderName, Provider>;
  /**
   * A workspace's own key for a provider (its secret OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY):
   * its requests then go out with that key and are not billed model-token credits.
   */
  workspaceKey?: (workspaceId: string, provider: ProviderName) => Promise<string | undefined>;
  /** Counts prompt tokens for deposits and estimates. Default: a thread of its own (closed with the gateway). */
  tokenCounter?: TokenCounter;
}

/**
 * Completion ids key the request's row and its usage event: time-ordered, so a long gateway history grows
 * those indexes at their end (docs/architecture.md, "Run ids").
 */
export const newCompletionId = (): string => `chatcmpl-${newTimeOrderedToken()}`;

const ZERO_USAGE: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/**
 * The AI gateway service: routes a chat-completions request to its provider and bills it through
 * the credit ledger (reserve a deposit, call the provider outside any transaction, settle at most
 * the deposit). Built once by the composition root.
 */
export class AiGateway {
  readonly catalog: ModelCatalog;
  readonly providers: Map<ProviderName, Provider>;
  readonly ledger: RequestLedger;
  private readonly minDepositNano: number;
  private readonly log?: Logger;
  private readonly observer?: AiObserver;
  private readonly tokens: TokenCounter;
  private sweeper?: NodeJS.Timeout;

  constructor(private readonly db: Database, private readonly ai: AiConfig, deps: AiGatewayDeps = {}) {
    this.providers = deps.providers ?? buildProviders(ai);
    const compat = this.providers.get('openai-compatible');
    this.catalog = new ModelCatalog(ai, compat?.listModels ? () => compat.listModels!() : undefined);
    this.ledger = requestLedger(db, {
      startingNano: usdToNano(ai.startingCreditsUsd), usage: deps.usage, settleWindowMs: ai.settleWindowMs,
      onLostSettlement: (err, requestId) => deps.log?.error({ err, requestId }, 'writing an AI settlement failed; its charge is lost'),
    });
    this.minDepositNano = usdToNano(ai.minDepositUsd);
    this.log = deps.log;
    this.observer = deps.observer;
    this.workspaceKey = deps.workspaceKey;
    this.tokens = deps.tokenCounter ?? new OffThreadTokenCounter({ timeoutMs: ai.tokenCountTimeoutMs });
  }

  private readonly workspaceKey?: AiGatewayDeps['workspaceKey'];

  /**
   * The model and the provider a request goes to: with the workspace's own key for the model's provider
   * when the workspace has one (also for a provider the operator did not configure), else the operator's.
   */
  async route(billing: Billing, request: ChatRequest): Promise<Awaited<ReturnType<AiGateway['resolve']>> & { keySource: KeySource }> {
    if (billing.workspaceId && this.workspaceKey) {
      const entry = (await this.catalog.resolve(request.model)) ?? this.catalog.builtIn(request.model);
      const name = entry?.provider;
      if (entry && name && name !== 'openai-compatible') {
        const key = await this.workspaceKey(billing.workspaceId, name);
        if (key) return { ...(await this.resolve(request, { model: entry, provider: providerWithKey(this.ai, name, key) })), keySource: 'workspace' };
      }
    }
    return { ...(await this.resolve(request)), keySource: 'operator' };
  }

  /**
   * The engine's AI port for one run: calls billed to `billedAccount` (source 'workflow'), their usage
   * recorded against the run's execution id when given.
   */
  portFor(billedAccount: string, workspaceId: string, executionId?: string): AiPort {
    return createAiPort(this, billedAccount, workspaceId, executionId);
  }

  /** Starts returning deposits that a dead process left reserved (after the upstream timeout plus two minutes). */
  start(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => {
      this.ledger.releaseAbandoned(this.ai.timeoutMs + 120_000)
        .catch((err: unknown) => this.log?.warn({ err }, 'releasing abandoned AI deposits failed'));
    }, 60_000);
    this.sweeper.unref();
  }

  /** Stops the sweep and writes the settlements waiting for their window (called again by later closers: harmless). */
  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.ledger.flush();
    await this.tokens.close();
  }

  /** The balance of an account, deposits of requests in flight taken out (undefined before its first use). */
  async balance(account: string): Promise<{ balanceNano: number; reservedNano: number; updatedAt: Date } | undefined> {
    const row = await getBalance(this.db, account);
    const held = this.ledger.heldNano(account);
    return row && { ...row, balanceNano: row.balanceNano - held, reservedNano: row.reservedNano + held };
  }

  /** Ledger entries of an account, newest first, before `beforeId` when given. */
  ledgerEntries(account: string, limit: number, beforeId?: number): Promise<LedgerRow[]> {
    return listLedger(this.db, account, limit, beforeId);
  }

  /** Finds the model (404) and checks the request's features against it (400). */
  async resolve(request: ChatRequest, chosen?: { model: ModelEntry; provider: Provider }): Promise<{ model: ModelEntry; provider: Provider; maxTokens: number; clientSetMaxTokens: boolean }> {
    const model = chosen?.model ?? await this.catalog.resolve(request.model);
    const provider = chosen?.provider ?? (model && this.providers.get(model.provider));
    if (!model || !provider) {
      throw new HttpError(404, await this.catalog.explainUnknown(request.model), { code: 'model_not_found', param: 'model' });
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
  async depositNano(request: ChatRequest, model: ModelEntry, maxTokens: number): Promise<number> {
    if (model.inputPerMillion === 0 && model.outputPerMillion === 0) return 0;
    const prompt = await depositPromptTokens(request, this.tokens);
    const n = Math.max(1, request.n ?? 1);
    return Math.max(this.minDepositNano, costNano(model, Math.ceil(prompt * 1.1), maxTokens * n));
  }

  private async reserve(billing: Billing, id: string, model: ModelEntry, depositNano: number, stream: boolean): Promise<number> {
    const r = await this.ledger.reserve({
      id, account: billing.account, depositNano, model: model.id, provider: model.provider, stream, source: billing.source,
      httpRequestId: billing.httpRequestId, workspaceId: billing.workspaceId, apiKeyId: billing.apiKeyId, executionId: billing.executionId,
    });
    if (!r.ok) {
      throw new HttpError(
        402,
        `Insufficient credits: this request needs a deposit of $${formatUsd(depositNano)} and the balance of ${billing.account} is $${formatUsd(r.balanceNano)}. ` +
          'Lower max_tokens, or add credits (weft credits grant).',
        { type: 'insufficient_quota', code: 'insufficient_credits' },
      );
    }
    return r.balanceAfterNano;
  }

  /** A provider call's signal: the caller's, and the upstream timeout (ended with the call). */
  private upstreamDeadline(signal?: AbortSignal) {
    return deadline(this.ai.timeoutMs, signal, `The provider did not answer within ${this.ai.timeoutMs} ms`);
  }

  /** A whole (non-streaming) completion, billed. */
  async complete(billing: Billing, request: ChatRequest, signal?: AbortSignal): Promise<CompletionResult> {
    const { model, provider, maxTokens, clientSetMaxTokens, keySource } = await this.route(billing, request);
    const id = newCompletionId();
    // The workspace's own key pays the provider: no deposit, nothing charged (the ledger still records the request).
    const deposit = keySource === 'workspace' ? 0 : await this.depositNano(request, model, maxTokens);
    await this.reserve(billing, id, model, deposit, false);
    let upstreamAnswer: ChatCompletion;
    const upstream = this.upstreamDeadline(signal);
    try {
      upstreamAnswer = await provider.complete(request, { upstreamModel: model.upstreamId, maxTokens, clientSetMaxTokens, signal: upstream.signal });
    } catch (err) {
      await this.releaseQuietly(id, err);
      throw this.toHttpError(err);
    } finally {
      upstream.end();
    }
    // Normalised before anything is billed: once settled, the answer must be one the response schema accepts.
    const completion = wellFormed(upstreamAnswer);
    let usage = completion.usage;
    let estimated = false;
    if (!validUsage(usage)) {
      const [prompt, completionTokens] = await Promise.all([
        estimatePromptTokens(request, this.tokens), estimateTextTokens(completionText(completion), this.tokens)]);
      usage = { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens };
      estimated = true;
    }
    const settled = await this.ledger.settle(id, {
      ...this.costs(keySource, model, usage),
      promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, estimated, outcome: 'completed',
    });
    this.observer?.aiUsage({ model: model.id, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, costUsd: nanoToUsd(settled?.chargedNano ?? 0) });
    const out: ChatCompletion = {
      ...completion,
      id,
      object: 'chat.completion',
      created: Number.isSafeInteger(completion.created) ? completion.created : Math.floor(Date.now() / 1000),
      model: model.id,
      // An estimate replaces a usage that was not whole counts, details included.
      usage: {
        ...(estimated ? {} : completion.usage),
        prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.prompt_tokens + usage.completion_tokens,
      },
    };
    return {
      completion: out,
      keySource,
      costNano: settled?.chargedNano ?? 0,
      overageNano: settled?.overageNano ?? 0,
      balanceAfterNano: settled?.balanceAfterNano ?? (await this.balance(billing.account))?.balanceNano ?? 0,
      model,
    };
  }

  /**
   * Starts a streaming completion: reserves the deposit and waits for the first chunk, so that a
   * provider refusing the request still becomes an ordinary HTTP error (deposit released).
   */
  async startStream(billing: Billing, request: ChatRequest, signal: AbortSignal): Promise<StreamSession> {
    const { model, provider, maxTokens, clientSetMaxTokens, keySource } = await this.route(billing, request);
    const id = newCompletionId();
    const deposit = keySource === 'workspace' ? 0 : await this.depositNano(request, model, maxTokens);
    const balanceAfterReserve = await this.reserve(billing, id, model, deposit, true);
    const created = Math.floor(Date.now() / 1000);
    // What the estimate needs of the text generated, not all of it: a stream may run until the upstream timeout.
    const generated = new GeneratedText();
    let usage: Usage | undefined;
    let iterator: AsyncIterator<ChatCompletionChunk>;
    let first: IteratorResult<ChatCompletionChunk>;
    // The timeout bounds the whole stream: it ends with `finish`.
    const upstream = this.upstreamDeadline(signal);
    try {
      iterator = provider.stream(request, { upstreamModel: model.upstreamId, maxTokens, clientSetMaxTokens, signal: upstream.signal })[Symbol.asyncIterator]();
      first = await iterator.next();
    } catch (err) {
      upstream.end();
      await this.releaseQuietly(id, err);
      throw this.toHttpError(err);
    }
    const rewrite = (c: ChatCompletionChunk): ChatCompletionChunk => {
      if (validUsage(c.usage)) usage = c.usage;
      // A usage that is not whole counts is estimated instead; the client is not shown it.
      else if (c.usage) delete c.usage;
      for (const ch of c.choices as unknown[]) {
        const delta = isRecord(ch) && isRecord(ch.delta) ? ch.delta : {};
        if (typeof delta.content === 'string') generated.add(delta.content);
        for (const t of Array.isArray(delta.tool_calls) ? delta.tool_calls as unknown[] : []) {
          const f = isRecord(t) && isRecord(t.function) ? t.function : {};
          generated.add((typeof f.name === 'string' ? f.name : '') + (typeof f.arguments === 'string' ? f.arguments : ''));
        }
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
        upstream.end();
        // Nothing generated and the provider failed: the request costs nothing.
        if (outcome === 'failed' && generated.empty && !usage) {
          const bal = await this.ledger.release(id, 'failed', error instanceof Error ? error.message : null);
          return { costNano: 0, overageNano: 0, balanceAfterNano: bal ?? balanceAfterReserve + deposit, usage: ZERO_USAGE, estimated: false };
        }
        let estimated = false;
        let u = usage;
        if (!u) {
          const [p, c] = await Promise.all([estimatePromptTokens(request, this.tokens), generated.estimateTokens(this.tokens)]);
          u = { prompt_tokens: p, completion_tokens: c, total_tokens: p + c };
          estimated = true;
        }
        const s = await this.ledger.settle(id, {
          ...this.costs(keySource, model, u), promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens, estimated, outcome,
        });
        this.observer?.aiUsage({ model: model.id, promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens, costUsd: nanoToUsd(s?.chargedNano ?? 0) });
        // Undefined: no longer reserved (the abandoned-deposit sweep returned it); nothing charged here.
        return {
          costNano: s?.chargedNano ?? 0,
          overageNano: s?.overageNano ?? 0,
          balanceAfterNano: s?.balanceAfterNano ?? (await this.balance(billing.account))?.balanceNano ?? 0,
          usage: u,
          estimated,
        };
      })();
      return finished;
    };
    return { id, keySource, model, depositNano: deposit, balanceAfterReserveNano: balanceAfterReserve, chunks: chunks(), finish };
  }

  /** What usage costs at the model's prices, and the prompt tokens' part of it; nothing on the workspace's own key. */
  private costs(keySource: KeySource, model: ModelEntry, usage: Usage): { costNano: number; inputCostNano: number } {
    if (keySource === 'workspace') return { costNano: 0, inputCostNano: 0 };
    const cost = costNano(model, usage.prompt_tokens, usage.completion_tokens);
    return { costNano: cost, inputCostNano: Math.min(cost, costNano(model, usage.prompt_tokens, 0)) };
  }

  private async releaseQuietly(id: string, err: unknown): Promise<void> {
    const msg = err instanceof Error ? err.message : String(err);
    await this.ledger.release(id, 'failed', msg);
  }

  /** A provider or feature failure as the gateway's HTTP error (AI envelope); anything else unchanged. */
  toHttpError(err: unknown): unknown {
    return toHttpError(err);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A tool call as the chat-completions format has it, or undefined for one without a usable name. */
function wellFormedToolCall(raw: unknown, i: number): ToolCall | undefined {
  if (!isRecord(raw) || !isRecord(raw.function)) return undefined;
  const { name, arguments: args } = raw.function;
  if (typeof name !== 'string' || name.length === 0 || name.length > 128) return undefined;
  const id = typeof raw.id === 'string' && raw.id.length > 0 && raw.id.length <= 256 ? raw.id : `call_${i}`;
  return { ...raw, id, type: 'function', function: { ...raw.function, name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) } };
}

/**
 * An upstream completion in the shape the gateway answers with: each choice an index, an assistant message
 * with text or null, well-formed tool calls, and a finish reason or null (an upstream may omit any of them).
 */
function wellFormed(c: ChatCompletion): ChatCompletion {
  const choices = (Array.isArray(c.choices) ? c.choices : []).map((raw: unknown, i): ChatChoice => {
    const ch = isRecord(raw) ? raw : {};
    const m = isRecord(ch.message) ? ch.message : {};
    const toolCalls = Array.isArray(m.tool_calls)
      ? m.tool_calls.map(wellFormedToolCall).filter((t): t is ToolCall => t !== undefined)
      : undefined;
    const { tool_calls: _dropped, ...message } = m;
    return {
      ...ch,
      index: Number.isSafeInteger(ch.index) ? (ch.index as number) : i,
      message: {
        ...message,
        role: 'assistant',
        content: typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? textOf(m.content) : null,
        ...(toolCalls && toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      },
      finish_reason: typeof ch.finish_reason === 'string' ? (ch.finish_reason as ChatChoice['finish_reason']) : null,
    };
  });
  return { ...c, choices };
}
