import { randomBytes } from 'node:crypto';
import { parseEventJson, postJson, readJson, textOf, upstreamEvents, nowSeconds } from './upstream.js';
import {
  ProviderError,
  UnsupportedFeatureError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatMessage,
  type ChatRequest,
  type FinishReason,
  type Provider,
  type ToolCall,
  type UpstreamCall,
  type Usage,
} from './types.js';

// Google Gemini API (generativelanguage): generateContent and streamGenerateContent?alt=sse.
// Roles are user and model; tools are functionDeclarations; structured output is responseSchema.

type Part = Record<string, unknown>;
interface Content { role: 'user' | 'model'; parts: Part[] }
interface GeminiResponse {
  candidates?: { content?: { parts?: Part[] }; finishReason?: string }[];
  usageMetadata?: { promptTokenCount?: number; candidatesTokenCount?: number; thoughtsTokenCount?: number; toolUsePromptTokenCount?: number };
  promptFeedback?: { blockReason?: string };
}

// The OpenAPI subset Gemini accepts in `parameters` and `responseSchema`.
const schemaKeys = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'properties', 'required', 'items', 'minItems', 'maxItems',
  'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'anyOf', 'propertyOrdering', 'default', 'example',
  'minProperties', 'maxProperties',
]);

/** Reduces a JSON schema to the subset Gemini accepts (drops `additionalProperties`, `$schema`, ...). */
export function toGeminiSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toGeminiSchema);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema as Record<string, unknown>)) {
    if (!schemaKeys.has(k)) continue;
    if (k === 'type' && Array.isArray(v)) {
      const types = v.filter((t) => t !== 'null');
      out.type = types[0] ?? 'string';
      if (types.length !== v.length) out.nullable = true;
    } else if (k === 'properties' && v && typeof v === 'object') {
      out.properties = Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([name, s]) => [name, toGeminiSchema(s)]));
    } else if (k === 'items' || k === 'anyOf') {
      out[k] = toGeminiSchema(v);
    } else {
      out[k] = v;
    }
  }
  return out;
}

function parseArgs(args: string): Record<string, unknown> {
  try {
    const v = JSON.parse(args || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return {};
  }
}

function userParts(content: ChatMessage['content']): Part[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const p of content) {
    if (p.type === 'text' && typeof p.text === 'string' && p.text) parts.push({ text: p.text });
    else if (p.type === 'image_url') {
      const url = (p as { image_url?: { url?: unknown } }).image_url?.url;
      if (typeof url !== 'string') continue;
      const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
      parts.push(m ? { inlineData: { mimeType: m[1], data: m[2] } } : { fileData: { fileUri: url } });
    }
  }
  return parts;
}

function translateMessages(messages: ChatMessage[]): { system: string; contents: Content[] } {
  const system: string[] = [];
  const contents: Content[] = [];
  const toolNames = new Map<string, string>();
  const push = (role: 'user' | 'model', parts: Part[]) => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'developer') {
      const t = textOf(m.content);
      if (t) system.push(t);
    } else if (m.role === 'user') {
      push('user', userParts(m.content));
    } else if (m.role === 'assistant') {
      const parts: Part[] = [];
      const t = textOf(m.content);
      if (t) parts.push({ text: t });
      for (const c of m.tool_calls ?? []) {
        toolNames.set(c.id, c.function.name);
        parts.push({ functionCall: { name: c.function.name, args: parseArgs(c.function.arguments) } });
      }
      push('model', parts);
    } else if (m.role === 'tool') {
      const name = toolNames.get(m.tool_call_id ?? '') ?? m.name ?? 'tool';
      const text = textOf(m.content);
      let response: unknown;
      try {
        response = JSON.parse(text);
      } catch {
        response = undefined;
      }
      if (!response || typeof response !== 'object' || Array.isArray(response)) response = { content: response ?? text };
      push('user', [{ functionResponse: { name, response } }]);
    }
  }
  return { system: system.join('\n\n'), contents };
}

export function toGeminiRequest(request: ChatRequest, call: UpstreamCall): Record<string, unknown> {
  const { system, contents } = translateMessages(request.messages);
  const body: Record<string, unknown> = { contents };
  if (system) body.systemInstruction = { parts: [{ text: system }] };
  const gen: Record<string, unknown> = { maxOutputTokens: call.maxTokens };
  if (request.temperature !== undefined) gen.temperature = request.temperature;
  if (request.top_p !== undefined) gen.topP = request.top_p;
  if (request.n !== undefined && request.n > 1) throw new UnsupportedFeatureError('Gemini models return one choice through this gateway: n must be 1', 'n');
  if (request.stop != null) gen.stopSequences = Array.isArray(request.stop) ? request.stop : [request.stop];
  const rf = request.response_format;
  if (rf?.type === 'json_object') gen.responseMimeType = 'application/json';
  else if (rf?.type === 'json_schema') {
    gen.responseMimeType = 'application/json';
    if (rf.json_schema.schema) gen.responseSchema = toGeminiSchema(rf.json_schema.schema);
  }
  body.generationConfig = gen;
  if (request.tools && request.tools.length > 0) {
    body.tools = [{
      functionDeclarations: request.tools.map((t) => ({
        name: t.function.name,
        ...(t.function.description ? { description: t.function.description } : {}),
        ...(t.function.parameters && Object.keys((t.function.parameters.properties as object | undefined) ?? {}).length > 0
          ? { parameters: toGeminiSchema(t.function.parameters) }
          : {}),
      })),
    }];
    const tc = request.tool_choice;
    if (tc === 'none') body.toolConfig = { functionCallingConfig: { mode: 'NONE' } };
    else if (tc === 'required') body.toolConfig = { functionCallingConfig: { mode: 'ANY' } };
    else if (tc && typeof tc === 'object') body.toolConfig = { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [tc.function.name] } };
    else if (tc === 'auto') body.toolConfig = { functionCallingConfig: { mode: 'AUTO' } };
  }
  return body;
}

function finishOf(reason: string | undefined, calledTools: boolean): FinishReason {
  if (calledTools) return 'tool_calls';
  switch (reason) {
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
      return 'content_filter';
    default:
      return 'stop';
  }
}

function usageOf(u: GeminiResponse['usageMetadata']): Usage {
  const prompt = (u?.promptTokenCount ?? 0) + (u?.toolUsePromptTokenCount ?? 0);
  const completion = (u?.candidatesTokenCount ?? 0) + (u?.thoughtsTokenCount ?? 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

const callId = () => `call_${randomBytes(12).toString('hex')}`;

function toolCallOf(p: Part): ToolCall | undefined {
  const fc = p.functionCall as { name?: unknown; args?: unknown; id?: unknown } | undefined;
  if (!fc || typeof fc.name !== 'string') return undefined;
  return { id: typeof fc.id === 'string' && fc.id ? fc.id : callId(), type: 'function', function: { name: fc.name, arguments: JSON.stringify(fc.args ?? {}) } };
}

export function fromGeminiResponse(r: GeminiResponse, model: string): ChatCompletion {
  const cand = r.candidates?.[0];
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const p of cand?.content?.parts ?? []) {
    if (typeof p.text === 'string' && p.thought !== true) text += p.text;
    const tc = toolCallOf(p);
    if (tc) toolCalls.push(tc);
  }
  const blocked = !cand && r.promptFeedback?.blockReason;
  return {
    id: '',
    object: 'chat.completion',
    created: nowSeconds(),
    model,
    choices: [{
      index: 0,
      message: { role: 'assistant', content: toolCalls.length > 0 && !text ? null : text, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}), refusal: null },
      finish_reason: blocked ? 'content_filter' : finishOf(cand?.finishReason, toolCalls.length > 0),
      logprobs: null,
    }],
    ...(r.usageMetadata ? { usage: usageOf(r.usageMetadata) } : {}),
  };
}

export class GeminiProvider implements Provider {
  readonly name = 'gemini' as const;

  constructor(private readonly baseUrl: string, private readonly apiKey: string) {}

  private url(model: string, method: string): string {
    return `${this.baseUrl}/v1beta/models/${encodeURIComponent(model)}:${method}`;
  }

  async complete(request: ChatRequest, call: UpstreamCall): Promise<ChatCompletion> {
    const res = await postJson(this.name, this.url(call.upstreamModel, 'generateContent'), { 'x-goog-api-key': this.apiKey }, toGeminiRequest(request, call), call.signal);
    const json = (await readJson(this.name, res)) as GeminiResponse;
    if (!json || typeof json !== 'object') throw new ProviderError(this.name, 502, 'The gemini provider answered with an empty body');
    return fromGeminiResponse(json, request.model);
  }

  async *stream(request: ChatRequest, call: UpstreamCall): AsyncIterable<ChatCompletionChunk> {
    const res = await postJson(
      this.name, `${this.url(call.upstreamModel, 'streamGenerateContent')}?alt=sse`, { 'x-goog-api-key': this.apiKey }, toGeminiRequest(request, call), call.signal,
    );
    const base = { id: '', object: 'chat.completion.chunk' as const, created: nowSeconds(), model: request.model };
    const chunk = (delta: ChatCompletionChunk['choices'][0]['delta'], finish: FinishReason | null = null): ChatCompletionChunk => ({
      ...base,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    });
    yield chunk({ role: 'assistant', content: '' });
    let usage: GeminiResponse['usageMetadata'];
    let finish: string | undefined;
    let tools = 0;
    let blocked = false;
    for await (const ev of upstreamEvents(this.name, res, call.signal)) {
      if (!ev.data) continue;
      const data = parseEventJson(this.name, ev.data) as GeminiResponse & { error?: { message?: string; status?: string } };
      if (data.error) throw new ProviderError(this.name, 502, data.error.message ?? 'The gemini provider reported an error mid-stream', undefined, data.error.status);
      if (data.usageMetadata) usage = data.usageMetadata;
      if (data.promptFeedback?.blockReason && !data.candidates) blocked = true;
      const cand = data.candidates?.[0];
      if (cand?.finishReason) finish = cand.finishReason;
      for (const p of cand?.content?.parts ?? []) {
        if (typeof p.text === 'string' && p.text && p.thought !== true) yield chunk({ content: p.text });
        const tc = toolCallOf(p);
        if (tc) yield chunk({ tool_calls: [{ index: tools++, id: tc.id, type: 'function', function: tc.function }] });
      }
    }
    yield chunk({}, blocked ? 'content_filter' : finishOf(finish, tools > 0));
    // Without usage metadata the gateway estimates the tokens from the text.
    if (usage) yield { ...base, choices: [], usage: usageOf(usage) };
  }
}
