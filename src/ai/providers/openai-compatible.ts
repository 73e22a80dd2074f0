import { OpenAiStyleProvider } from './openai.js';

/**
 * Any server speaking the chat-completions format (Ollama, vLLM, LM Studio, OpenRouter, ...).
 * Its models come from its own `/models` listing.
 */
export function createOpenAiCompatibleProvider(baseUrl: string, apiKey?: string): OpenAiStyleProvider {
  return new OpenAiStyleProvider({ name: 'openai-compatible', baseUrl, apiKey, maxTokensField: 'max_tokens' });
}
