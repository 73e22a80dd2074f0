import { getJson, parseEventJson, postJson, readJson, upstreamEvents } from './upstream.js';
import {
  ProviderError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatRequest,
  type Provider,
  type ProviderName,
  type UpstreamCall,
} from './types.js';

export interface OpenAiStyleOptions {
  name: ProviderName;
  baseUrl: string;
  apiKey?: string;
  /**
   * OpenAI's current models take `max_completion_tokens` (reasoning models refuse `max_tokens`);
   * most OpenAI-compatible servers know only `max_tokens`.
   */
  maxTokensField: 'max_completion_tokens' | 'max_tokens';
}

/** A provider speaking the chat-completions format itself: the request passes through nearly as is. */
export class OpenAiStyleProvider implements Provider {
  readonly name: ProviderName;

  constructor(private readonly opts: OpenAiStyleOptions) {
    this.name = opts.name;
  }

  protected headers(): Record<string, string> {
    return this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {};
  }

  private body(request: ChatRequest, call: UpstreamCall, stream: boolean): Record<string, unknown> {
    const { max_tokens: _max, max_completion_tokens: _maxc, stream: _s, stream_options: _so, ...rest } = request;
    const body: Record<string, unknown> = { ...rest, model: call.upstreamModel, [this.opts.maxTokensField]: call.maxTokens };
    if (stream) {
      body.stream = true;
      body.stream_options = { include_usage: true };
    }
    return body;
  }

  async complete(request: ChatRequest, call: UpstreamCall): Promise<ChatCompletion> {
    const res = await postJson(this.name, `${this.opts.baseUrl}/chat/completions`, this.headers(), this.body(request, call, false), call.signal);
    const json = await readJson(this.name, res);
    const c = json as Partial<ChatCompletion> | null;
    if (!c || typeof c !== 'object' || !Array.isArray(c.choices)) {
      throw new ProviderError(this.name, 502, `The ${this.name} provider answered without choices`);
    }
    return c as ChatCompletion;
  }

  async *stream(request: ChatRequest, call: UpstreamCall): AsyncIterable<ChatCompletionChunk> {
    const res = await postJson(this.name, `${this.opts.baseUrl}/chat/completions`, this.headers(), this.body(request, call, true), call.signal);
    for await (const ev of upstreamEvents(this.name, res, call.signal)) {
      if (ev.data === '[DONE]') return;
      if (ev.data === '') continue;
      const chunk = parseEventJson(this.name, ev.data) as Partial<ChatCompletionChunk> & { error?: { message?: string; type?: string; code?: string } };
      if (chunk.error) {
        throw new ProviderError(this.name, 502, chunk.error.message ?? 'The provider reported an error mid-stream', chunk.error.type, chunk.error.code);
      }
      if (!Array.isArray(chunk.choices)) continue;
      yield chunk as ChatCompletionChunk;
    }
  }

  async listModels(signal?: AbortSignal): Promise<string[]> {
    const body = (await getJson(this.name, `${this.opts.baseUrl}/models`, this.headers(), signal ?? AbortSignal.timeout(10_000))) as {
      data?: { id?: unknown }[];
    };
    return (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string' && id.length > 0);
  }
}

export function createOpenAiProvider(baseUrl: string, apiKey: string): OpenAiStyleProvider {
  return new OpenAiStyleProvider({ name: 'openai', baseUrl, apiKey, maxTokensField: 'max_completion_tokens' });
}
