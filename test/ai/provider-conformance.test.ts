// The provider conformance suite (test/ai/provider-conformance.ts) against every adapter.
import { afterAll, beforeAll } from 'vitest';
import { AnthropicProvider } from '../../src/ai/providers/anthropic.js';
import { GeminiProvider } from '../../src/ai/providers/gemini.js';
import { createOpenAiProvider } from '../../src/ai/providers/openai.js';
import { createOpenAiCompatibleProvider } from '../../src/ai/providers/openai-compatible.js';
import { startFakeProviders, type FakeProviders, type RecordedRequest } from '../support/fake-providers.js';
import { providerConformance, type SentTool } from './provider-conformance.js';

let fake: FakeProviders;
beforeAll(async () => {
  fake = await startFakeProviders();
});
afterAll(async () => {
  await fake?.close();
});

// Chat-completions wire format (OpenAI and OpenAI-compatible servers).
const openAiWire = {
  sentModel: (r: RecordedRequest) => r.body.model,
  sentTools: (r: RecordedRequest): SentTool[] =>
    (r.body.tools ?? []).map((t: any) => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters })),
  sentToolResult: (r: RecordedRequest) => {
    const m = (r.body.messages ?? []).find((x: any) => x.role === 'tool');
    return m ? { ref: m.tool_call_id, content: m.content } : undefined;
  },
  toolResultRef: 'id' as const,
};

providerConformance(() => fake, {
  label: 'OpenAI',
  fake: 'openai',
  make: (f, base) => createOpenAiProvider(base ?? f.env.OPENAI_BASE_URL, 'sk-fake-openai'),
  upstreamModel: 'gpt-4o-2024-08-06',
  sentMaxTokens: (r) => r.body.max_completion_tokens,
  ...openAiWire,
  lacks: { modelList: "OpenAI's models come from the built-in catalog; the gateway never asks OpenAI for its list" },
});

providerConformance(() => fake, {
  label: 'OpenAI-compatible',
  fake: 'compat',
  make: (f, base) => createOpenAiCompatibleProvider(base ?? f.env.OPENAI_COMPATIBLE_BASE_URL),
  upstreamModel: 'llama3.2:1b',
  sentMaxTokens: (r) => r.body.max_tokens,
  ...openAiWire,
  listedModels: ['llama3.2:1b', 'qwen2.5:0.5b'],
});

providerConformance(() => fake, {
  label: 'Anthropic',
  fake: 'anthropic',
  make: (f, base) => new AnthropicProvider(base ?? f.env.ANTHROPIC_BASE_URL, 'sk-fake-anthropic'),
  upstreamModel: 'claude-sonnet-4-5',
  sentModel: (r) => r.body.model,
  sentMaxTokens: (r) => r.body.max_tokens,
  sentTools: (r) => (r.body.tools ?? []).map((t: any) => ({ name: t.name, description: t.description, parameters: t.input_schema })),
  sentToolResult: (r) => {
    for (const m of r.body.messages ?? []) {
      for (const b of Array.isArray(m.content) ? m.content : []) if (b.type === 'tool_result') return { ref: b.tool_use_id, content: b.content };
    }
    return undefined;
  },
  toolResultRef: 'id',
  lacks: {
    usageOmitted: 'The Messages API always reports usage (input_tokens, output_tokens) in every answer',
    modelList: "Anthropic's models come from the built-in catalog",
  },
});

providerConformance(() => fake, {
  label: 'Gemini',
  fake: 'gemini',
  make: (f, base) => new GeminiProvider(base ?? f.env.GEMINI_BASE_URL, 'fake-gemini'),
  upstreamModel: 'gemini-2.5-flash',
  // The model is in the path: v1beta/models/{model}:generateContent or :streamGenerateContent.
  sentModel: (r) => /\/v1beta\/models\/([^:]+):/.exec(r.path)?.[1],
  sentMaxTokens: (r) => r.body.generationConfig?.maxOutputTokens,
  sentTools: (r) => (r.body.tools ?? []).flatMap((t: any) => t.functionDeclarations ?? [])
    .map((d: any) => ({ name: d.name, description: d.description, parameters: d.parameters })),
  sentToolResult: (r) => {
    for (const c of r.body.contents ?? []) {
      for (const p of c.parts ?? []) if (p.functionResponse) return { ref: p.functionResponse.name, content: p.functionResponse.response };
    }
    return undefined;
  },
  // Gemini's function calls carry no ids: a result names its function.
  toolResultRef: 'name',
  lacks: { modelList: "Gemini's models come from the built-in catalog" },
});
