import type { AiConfig } from '../../config.js';
import { AnthropicProvider } from './anthropic.js';
import { GeminiProvider } from './gemini.js';
import { createOpenAiProvider } from './openai.js';
import { createOpenAiCompatibleProvider } from './openai-compatible.js';
import type { Provider, ProviderName } from './types.js';

/** The providers that are configured (an API key, or a base URL for the OpenAI-compatible one). */
export function buildProviders(ai: AiConfig): Map<ProviderName, Provider> {
  const m = new Map<ProviderName, Provider>();
  if (ai.openai.apiKey) m.set('openai', createOpenAiProvider(ai.openai.baseUrl, ai.openai.apiKey));
  if (ai.anthropic.apiKey) m.set('anthropic', new AnthropicProvider(ai.anthropic.baseUrl, ai.anthropic.apiKey));
  if (ai.gemini.apiKey) m.set('gemini', new GeminiProvider(ai.gemini.baseUrl, ai.gemini.apiKey));
  if (ai.openaiCompatible.baseUrl) m.set('openai-compatible', createOpenAiCompatibleProvider(ai.openaiCompatible.baseUrl, ai.openaiCompatible.apiKey));
  return m;
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
