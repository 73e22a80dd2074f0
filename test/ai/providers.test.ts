import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAiServer, type AiTestServer } from './ai-server.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import * as ledger from '../../src/ai/credit-ledger.js';

let t: AiTestServer;
let fake: FakeProviders;
let client: OpenAI;

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startAiServer({ env: { ...fake.env } });
  await ledger.grant(t.db, `workspace:${t.workspaceId}`, ledger.usdToNano(50), 'test');
  client = new OpenAI({ baseURL: `${t.url}/api/v1/ai`, apiKey: t.apiKey, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.handler = (req) => ({ text: `Hello from ${req.provider}`, usage: { prompt: 100, completion: 50 } });
});

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: ['string', 'null'], enum: ['c', 'f', null] } }, required: ['city'], additionalProperties: false },
  },
};

/** A conversation with every role: system, user, assistant with a tool call, the tool's result. */
const conversation: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
  { role: 'user', content: [{ type: 'text', text: 'And in words?' }] },
];

async function collect(stream: AsyncIterable<OpenAI.Chat.ChatCompletionChunk>) {
  let text = '';
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  const calls: Record<number, { id?: string; name?: string; args: string }> = {};
  for await (const c of stream) {
    const ch = c.choices[0];
    if (ch?.delta?.content) text += ch.delta.content;
    for (const tc of ch?.delta?.tool_calls ?? []) {
      calls[tc.index] ??= { args: '' };
      if (tc.id) calls[tc.index].id = tc.id;
      if (tc.function?.name) calls[tc.index].name = tc.function.name;
      calls[tc.index].args += tc.function?.arguments ?? '';
    }
    if (ch?.finish_reason) finish = ch.finish_reason;
    if (c.usage) usage = c.usage;
  }
  return { text, finish, usage, calls: Object.values(calls) };
}

describe('Anthropic Messages API', () => {
  it('translates the request: separate system prompt, content blocks, tool_use and tool_result', async () => {
    const c = await client.chat.completions.create({
      model: 'claude-sonnet-4-5', messages: conversation, tools: [weatherTool], tool_choice: 'required',
      temperature: 1.6, top_p: 0.9, stop: 'END', max_tokens: 300,
    });
    expect(c.choices[0].message.content).toBe('Hello from anthropic');
    expect(c.usage).toMatchObject({ prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 });
    const req = fake.requests.at(-1)!;
    expect(req.path).toBe('/anthropic/v1/messages');
    expect(req.headers['x-api-key']).toBe('sk-fake-anthropic');
    expect(req.headers['anthropic-version']).toBe('2023-06-01');
    expect(req.body).toMatchObject({
      model: 'claude-sonnet-4-5', system: 'You are terse.', max_tokens: 300, temperature: 1, top_p: 0.9, stop_sequences: ['END'],
      tool_choice: { type: 'any' },
    });
    expect(req.body.tools).toEqual([{ name: 'get_weather', description: 'Current weather of a city', input_schema: weatherTool.function.parameters }]);
    expect(req.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '{"temp":21}' }, { type: 'text', text: 'And in words?' }] },
    ]);
  });

  it('returns tool_use blocks as tool calls', async () => {
    fake.handler = () => ({ toolCalls: [{ id: 'toolu_9', name: 'get_weather', arguments: { city: 'Oslo' } }], usage: { prompt: 20, completion: 9 } });
    const c = await client.chat.completions.create({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Oslo?' }], tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    expect(fake.requests.at(-1)!.body.tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
    expect(c.choices[0].finish_reason).toBe('tool_calls');
    expect(c.choices[0].message.tool_calls).toEqual([{ id: 'toolu_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }]);
  });

  it('streams text and tool calls from the SSE events, with usage', async () => {
    fake.handler = () => ({ text: 'Sunny and mild', pieces: 3, toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: 'Rome' } }], usage: { prompt: 33, completion: 22 } });
    const s = await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Rome?' }], tools: [weatherTool], stream: true, stream_options: { include_usage: true } });
    const r = await collect(s);
    expect(fake.requests.at(-1)!.body.stream).toBe(true);
    expect(r.text).toBe('Sunny and mild');
    expect(r.calls).toEqual([{ id: 'toolu_1', name: 'get_weather', args: '{"city":"Rome"}' }]);
    expect(r.finish).toBe('tool_calls');
    expect(r.usage).toMatchObject({ prompt_tokens: 33, completion_tokens: 22 });
  });

  it('answers json_schema through a forced tool and returns the JSON as content', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    fake.handler = () => ({ toolCalls: [{ name: 'verdict', arguments: { answer: 'yes' } }] });
    const c = await client.chat.completions.create({
      model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Yes or no?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema } },
    });
    const req = fake.requests.at(-1)!;
    expect(req.body.tool_choice).toEqual({ type: 'tool', name: 'verdict' });
    expect(req.body.tools[0]).toMatchObject({ name: 'verdict', input_schema: schema });
    expect(c.choices[0].finish_reason).toBe('stop');
    expect(JSON.parse(c.choices[0].message.content!)).toEqual({ answer: 'yes' });
    expect(c.choices[0].message.tool_calls).toBeUndefined();

    const s = await client.chat.completions.create({
      model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Yes or no?' }], stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema } },
    });
    const r = await collect(s);
    expect(JSON.parse(r.text)).toEqual({ answer: 'yes' });
    expect(r.calls).toEqual([]);
    expect(r.finish).toBe('stop');
  });

  it('maps max_tokens stops to finish_reason length', async () => {
    fake.handler = () => ({ text: 'cut', finish: 'length' });
    const c = await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'long' }], max_tokens: 3 });
    expect(c.choices[0].finish_reason).toBe('length');
  });

  it('refuses n > 1 with a 400', async () => {
    await expect(client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'x' }], n: 2 })).rejects.toMatchObject({ status: 400 });
  });
});

describe('Google Gemini API', () => {
  it('translates the request: systemInstruction, user/model roles, functionCall/functionResponse, generationConfig', async () => {
    const c = await client.chat.completions.create({
      model: 'gemini-2.5-flash', messages: conversation, tools: [weatherTool], tool_choice: 'auto',
      temperature: 0.4, top_p: 0.8, stop: ['END', 'STOP'], max_tokens: 256,
    });
    expect(c.choices[0].message.content).toBe('Hello from gemini');
    expect(c.usage).toMatchObject({ prompt_tokens: 100, completion_tokens: 50 });
    const req = fake.requests.at(-1)!;
    expect(req.path).toBe('/gemini/v1beta/models/gemini-2.5-flash:generateContent');
    expect(req.headers['x-goog-api-key']).toBe('fake-gemini');
    expect(req.body.systemInstruction).toEqual({ parts: [{ text: 'You are terse.' }] });
    expect(req.body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp: 21 } } }, { text: 'And in words?' }] },
    ]);
    expect(req.body.generationConfig).toEqual({ maxOutputTokens: 256, temperature: 0.4, topP: 0.8, stopSequences: ['END', 'STOP'] });
    // additionalProperties is not part of Gemini's schema subset; a nullable type becomes nullable.
    expect(req.body.tools).toEqual([{
      functionDeclarations: [{
        name: 'get_weather', description: 'Current weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', nullable: true, enum: ['c', 'f', null] } }, required: ['city'] },
      }],
    }]);
    expect(req.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
  });

  it('returns functionCall parts as tool calls', async () => {
    fake.handler = () => ({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Lima' } }] });
    const c = await client.chat.completions.create({ model: 'gemini-2.5-pro', messages: [{ role: 'user', content: 'Lima?' }], tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    expect(fake.requests.at(-1)!.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
    expect(c.choices[0].finish_reason).toBe('tool_calls');
    const call = c.choices[0].message.tool_calls![0] as { id: string; function: { name: string; arguments: string } };
    expect(call.id).toMatch(/^call_/);
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Lima"}' });
  });

  it('asks for JSON with responseSchema', async () => {
    fake.handler = () => ({ text: '{"answer":"no"}' });
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };
    const c = await client.chat.completions.create({
      model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Yes or no?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema, strict: true } },
    });
    expect(fake.requests.at(-1)!.body.generationConfig).toMatchObject({
      responseMimeType: 'application/json', responseSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
    });
    expect(JSON.parse(c.choices[0].message.content!)).toEqual({ answer: 'no' });
  });

  it('streams with streamGenerateContent?alt=sse', async () => {
    fake.handler = () => ({ text: 'Cloudy later today', pieces: 3, usage: { prompt: 12, completion: 7 } });
    const s = await client.chat.completions.create({ model: 'gemini-2.0-flash', messages: [{ role: 'user', content: 'Sky?' }], stream: true, stream_options: { include_usage: true } });
    const r = await collect(s);
    expect(fake.requests.at(-1)!.path).toBe('/gemini/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
    expect(r.text).toBe('Cloudy later today');
    expect(r.finish).toBe('stop');
    expect(r.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 7 });
  });

  it('streams function calls', async () => {
    fake.handler = () => ({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Kyiv' } }] });
    const s = await client.chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Kyiv?' }], tools: [weatherTool], stream: true });
    const r = await collect(s);
    expect(r.calls).toEqual([{ id: expect.stringMatching(/^call_/), name: 'get_weather', args: '{"city":"Kyiv"}' }]);
    expect(r.finish).toBe('tool_calls');
  });
});

describe('OpenAI-compatible server', () => {
  it('routes the models its /models lists, sends max_tokens, and streams', async () => {
    const c = await client.chat.completions.create({ model: 'qwen2.5:0.5b', messages: [{ role: 'user', content: 'hi' }], max_tokens: 64 });
    expect(c.choices[0].message.content).toBe('Hello from compat');
    const req = fake.requests.at(-1)!;
    expect(req.path).toBe('/compat/v1/chat/completions');
    expect(req.headers.authorization).toBeUndefined();
    expect(req.body).toMatchObject({ model: 'qwen2.5:0.5b', max_tokens: 64 });
    expect(req.body.max_completion_tokens).toBeUndefined();
    const s = await client.chat.completions.create({ model: 'llama3.2:1b', messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect((await collect(s)).text).toBe('Hello from compat');
  });

  it('passes the JSON response formats through unchanged', async () => {
    fake.handler = () => ({ text: '{"a":1}' });
    const rf = { type: 'json_schema' as const, json_schema: { name: 'a', schema: { type: 'object', properties: { a: { type: 'number' } } }, strict: true } };
    await client.chat.completions.create({ model: 'llama3.2:1b', messages: [{ role: 'user', content: 'hi' }], response_format: rf, seed: 7 });
    expect(fake.requests.at(-1)!.body.response_format).toEqual(rf);
    expect(fake.requests.at(-1)!.body.seed).toBe(7);
  });
});
