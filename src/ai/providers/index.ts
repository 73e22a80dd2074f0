import type { AiConfig } from '../../config.js';
import { SecretScrubber } from '../secret-scrubber.js';
import { AnthropicProvider } from './anthropic.js';
import { GeminiProvider } from './gemini.js';
import { createOpenAiProvider } from './openai.js';
import { createOpenAiCompatibleProvider } from './openai-compatible.js';
import type { ChatCompletionChunk, Provider, ProviderName } from './types.js';

/**
 * The providers that are configured (an API key, or a base URL for the OpenAI-compatible one), each
 * behind the secret scrubber: no error of any of them carries a configured key onward.
 */
export function buildProviders(ai: AiConfig): Map<ProviderName, Provider> {
  const scrubber = new SecretScrubber([ai.openai.apiKey, ai.anthropic.apiKey, ai.gemini.apiKey, ai.openaiCompatible.apiKey]);
  const m = new Map<ProviderName, Provider>();
  const add = (p: Provider) => m.set(p.name, withScrubbedErrors(p, scrubber));
  if (ai.openai.apiKey) add(createOpenAiProvider(ai.openai.baseUrl, ai.openai.apiKey));
  if (ai.anthropic.apiKey) add(new AnthropicProvider(ai.anthropic.baseUrl, ai.anthropic.apiKey));
  if (ai.gemini.apiKey) add(new GeminiProvider(ai.gemini.baseUrl, ai.gemini.apiKey));
  if (ai.openaiCompatible.baseUrl) add(createOpenAiCompatibleProvider(ai.openaiCompatible.baseUrl, ai.openaiCompatible.apiKey));
  return m;
}

/** `provider` whose every failure (a whole answer, a stream before or after its first chunk, a model listing) is scrubbed. */
export function withScrubbedErrors(provider: Provider, scrubber: SecretScrubber): Provider {
  async function* scrubbedStream(chunks: AsyncIterable<ChatCompletionChunk>): AsyncGenerator<ChatCompletionChunk> {
    try {
      yield* chunks;
    } catch (err) {
      throw scrubber.error(err);
    }
  }
  const listModels = provider.listModels?.bind(provider);
  return {
    name: provider.name,
    complete: (request, call) => provider.complete(request, call).catch((err: unknown) => {
      throw scrubber.error(err);
    }),
    stream: (request, call) => scrubbedStream(provider.stream(request, call)),
    ...(listModels
      ? {
        listModels: (signal?: AbortSignal) => listModels(signal).catch((err: unknown) => {
          throw scrubber.error(err);
        }),
      }
      : {}),
  };
}

/** A provider of the operator's configuration (base URL) called with another key: a workspace's own. */
export function providerWithKey(ai: AiConfig, name: Exclude<ProviderName, 'openai-compatible'>, apiKey: string): Provider {
  switch (name) {
    case 'openai':
      return createOpenAiProvider(ai.openai.baseUrl, apiKey);
    case 'anthropic':
      return new AnthropicProvider(ai.anthropic.baseUrl, apiKey);
    case 'gemini':
      return new GeminiProvider(ai.gemini.baseUrl, apiKey);
  }
}
