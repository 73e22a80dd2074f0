import { describe, expect, it } from 'vitest';
import { ModelCatalog } from '../../src/ai/catalog.js';
import { loadConfig } from '../../src/config.js';

/** The catalog's explanation of an unknown model, for the configurations the HTTP tests do not start. */
const catalog = (env: Record<string, string>, listCompat?: () => Promise<string[]>) => new ModelCatalog(loadConfig(env).ai, listCompat);

describe('unknown-model message', () => {
  it('says how to configure the provider of a known model, or any provider, when none is configured', async () => {
    const text = await catalog({}).explainUnknown('gpt-4o');
    expect(text).toBe("The model 'gpt-4o' does not exist or is not available on this gateway. "
      + 'It is an OpenAI model, whose provider is not configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a proxy). '
      + 'No other provider is configured yet.');
    expect(await catalog({}).explainUnknown('my-model')).toBe("The model 'my-model' does not exist or is not available on this gateway. "
      + 'To serve it, set OPENAI_COMPATIBLE_BASE_URL to a server that lists it (Ollama, vLLM, LM Studio, OpenRouter), or add it to WEFT_AI_MODELS with its provider. '
      + 'No provider is configured yet: set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or OPENAI_COMPATIBLE_BASE_URL.');
  });

  it('names a WEFT_AI_MODELS entry whose provider is missing, and the models an OpenAI-compatible server lists', async () => {
    const env = {
      OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1',
      WEFT_AI_MODELS: JSON.stringify([{ id: 'house-model', provider: 'gemini' }]),
    };
    const text = await catalog(env, async () => ['llama3.2:1b', 'qwen3:4b']).explainUnknown('house-model');
    expect(text).toContain('It is a Google Gemini model, whose provider is not configured: set GEMINI_API_KEY');
    expect(text).toMatch(/Configured models: llama3\.2:1b, qwen3:4b\.$/);
  });

  it('falls back to the static list when the OpenAI-compatible server cannot be reached', async () => {
    const env = { ANTHROPIC_API_KEY: 'k', OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1' };
    const text = await catalog(env, async () => { throw new Error('down'); }).explainUnknown('mystery');
    expect(text).toContain('To serve it, set OPENAI_COMPATIBLE_BASE_URL to a server that lists it');
    expect(text).toMatch(/Configured models: claude-opus-4-1, .*claude-3-5-haiku-latest\.$/);
  });
});
