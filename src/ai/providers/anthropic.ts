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

// Anthropic Messages API (https://docs.anthropic.com/en/api/messages): the system prompt is a
// separate field, content is a list of blocks, tool calls are `tool_use` blocks and their results
// `tool_result` blocks in a user turn.

type Block = Record<string, unknown> & { type: string };
interface AnthropicMessage { role: 'user' | 'assistant'; content: Block[] }

interface AnthropicResponse {
  id?: string;
  content?: Block[];
  stop_reason?: string | null;
  usage?: AnthropicUsage;
}
interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/** How a JSON-schema answer is obtained: a forced tool whose input is the answer. */
interface JsonTool { name: string; wrapped: boolean }

const API_VERSION = '2023-06-01';

function imageBlock(url: string): Block {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (m) return { type: 'image', source: { type: 'base64', media_type: m[1], data: m[2] } };
  return { type: 'image', source: { type: 'url', url } };
}

function userBlocks(content: ChatMessage['content']): Block[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) return [];
  const out: Block[] = [];
  for (const part of content) {
    if (part.type === 'text' && typeof part.text === 'string' && part.text) out.push({ type: 'text', text: part.text });
    else if (part.type === 'image_url') {
      const url = (part as { image_url?: { url?: unknown } }).image_url?.url;
      if (typeof url === 'string') out.push(imageBlock(url));
    }
  }
  return out;
}

function parseArguments(args: string): Record<string, unknown> {
  try {
    const v = JSON.parse(args || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return {};
  }
}

function translateMessages(messages: ChatMessage[]): { system: string; messages: AnthropicMessage[] } {
  const system: string[] = [];
  const out: AnthropicMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
      case 'developer': {
        const t = textOf(m.content);
        if (t) system.push(t);
        break;
      }
      case 'user':
        push('user', userBlocks(m.content));
        break;
      case 'assistant': {
        const blocks: Block[] = [];
        const t = textOf(m.content);
        if (t) blocks.push({ type: 'text', text: t });
        for (const call of m.tool_calls ?? []) {
          blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: parseArguments(call.function.arguments) });
        }
        push('assistant', blocks);
        break;
      }
      case 'tool':
        push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content: textOf(m.content) }]);
        break;
    }
  }
  return { system: system.join('\n\n'), messages: out };
}

export function toAnthropicRequest(request: ChatRequest, call: UpstreamCall, stream: boolean): { body: Record<string, unknown>; jsonTool?: JsonTool } {
  if ((request.n ?? 1) > 1) throw new UnsupportedFeatureError('Anthropic models return one choice: n must be 1', 'n');
  const { system, messages } = translateMessages(request.messages);
  const body: Record<string, unknown> = { model: call.upstreamModel, max_tokens: call.maxTokens, messages };
  let systemText = system;
  if (request.temperature !== undefined) body.temperature = Math.min(request.temperature, 1);
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.stop != null) body.stop_sequences = Array.isArray(request.stop) ? request.stop : [request.stop];
  if (stream) body.stream = true;

  const tools: Record<string, unknown>[] = (request.tools ?? []).map((t) => ({
    name: t.function.name,
    ...(t.function.description ? { description: t.function.description } : {}),
    input_schema: t.function.parameters ?? { type: 'object', properties: {} },
  }));
  let toolChoice: Record<string, unknown> | undefined;
  const tc = request.tool_choice;
  if (tc === 'auto') toolChoice = { type: 'auto' };
  else if (tc === 'required') toolChoice = { type: 'any' };
  else if (tc === 'none') toolChoice = { type: 'none' };
  else if (tc && typeof tc === 'object') toolChoice = { type: 'tool', name: tc.function.name };

  let jsonTool: JsonTool | undefined;
  const rf = request.response_format;
  if (rf?.type === 'json_schema') {
    const schema = rf.json_schema.schema ?? { type: 'object' };
    const wrapped = schema.type !== 'object';
    jsonTool = { name: rf.json_schema.name || 'json_response', wrapped };
    tools.push({
      name: jsonTool.name,
      description: rf.json_schema.description ?? 'Give the final answer as this structured object.',
      input_schema: wrapped ? { type: 'object', properties: { value: schema }, required: ['value'] } : schema,
    });
    if (!toolChoice || toolChoice.type === 'auto') {
      toolChoice = tools.length === 1 ? { type: 'tool', name: jsonTool.name } : { type: 'any' };
    }
  } else if (rf?.type === 'json_object') {
    systemText = (systemText ? systemText + '\n\n' : '') + 'Answer with one JSON object and nothing else.';
  }
  if (systemText) body.system = systemText;
  if (tools.length > 0) body.tools = tools;
  if (toolChoice && tools.length > 0) body.tool_choice = toolChoice;
  return { body, jsonTool };
}

function finishOf(stop: string | null | undefined, calledTools: boolean): FinishReason {
  switch (stop) {
    case 'max_tokens':
      return 'length';
    case 'tool_use':
      return calledTools ? 'tool_calls' : 'stop';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

function usageOf(u: AnthropicUsage | undefined): Usage {
  const prompt = (u?.input_tokens ?? 0) + (u?.cache_creation_input_tokens ?? 0) + (u?.cache_read_input_tokens ?? 0);
  const completion = u?.output_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function jsonAnswer(input: unknown, tool: JsonTool): string {
  const v = tool.wrapped && input && typeof input === 'object' ? (input as { value?: unknown }).value : input;
  return JSON.stringify(v ?? null);
}

export function fromAnthropicResponse(r: AnthropicResponse, model: string, jsonTool?: JsonTool): ChatCompletion {
  let text = '';
  const toolCalls: ToolCall[] = [];
  let answered = false;
  for (const block of r.content ?? []) {
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use') {
      if (jsonTool && block.name === jsonTool.name) {
        text = jsonAnswer(block.input, jsonTool);
        answered = true;
      } else {
        toolCalls.push({ id: String(block.id), type: 'function', function: { name: String(block.name), arguments: JSON.stringify(block.input ?? {}) } });
      }
    }
  }
  const calledTools = toolCalls.length > 0 && !answered;
  return {
    id: r.id ?? '',
    object: 'chat.completion',
    created: nowSeconds(),
    model,
    choices: [{
      index: 0,
      message: { role: 'assistant', content: calledTools && !text ? null : text, ...(calledTools ? { tool_calls: toolCalls } : {}), refusal: null },
      finish_reason: finishOf(r.stop_reason, calledTools),
      logprobs: null,
    }],
    ...(r.usage ? { usage: usageOf(r.usage) } : {}),
  };
}

export class AnthropicProvider implements Provider {
  readonly name = 'anthropic' as const;

  constructor(private readonly baseUrl: string, private readonly apiKey: string) {}

  private headers(): Record<string, string> {
    return { 'x-api-key': this.apiKey, 'anthropic-version': API_VERSION };
  }

  async complete(request: ChatRequest, call: UpstreamCall): Promise<ChatCompletion> {
    const { body, jsonTool } = toAnthropicRequest(request, call, false);
    const res = await postJson(this.name, `${this.baseUrl}/v1/messages`, this.headers(), body, call.signal);
    const json = (await readJson(this.name, res)) as AnthropicResponse;
    if (!json || typeof json !== 'object' || !Array.isArray(json.content)) {
      throw new ProviderError(this.name, 502, 'The anthropic provider answered without content');
    }
    return fromAnthropicResponse(json, request.model, jsonTool);
  }

  async *stream(request: ChatRequest, call: UpstreamCall): AsyncIterable<ChatCompletionChunk> {
    const { body, jsonTool } = toAnthropicRequest(request, call, true);
    const res = await postJson(this.name, `${this.baseUrl}/v1/messages`, this.headers(), body, call.signal);
    const base = { id: '', object: 'chat.completion.chunk' as const, created: nowSeconds(), model: request.model };
    const chunk = (delta: ChatCompletionChunk['choices'][0]['delta'], finish: FinishReason | null = null): ChatCompletionChunk => ({
      ...base,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    });
    let usage: AnthropicUsage | undefined;
    // Block index -> what it is: a text block, a caller's tool (with its tool_calls index) or the JSON answer.
    const blocks = new Map<number, { kind: 'text' } | { kind: 'tool'; index: number } | { kind: 'json'; buffer: string }>();
    let toolCount = 0;
    let answered = false;
    let stopReason: string | null | undefined;
    for await (const ev of upstreamEvents(this.name, res, call.signal)) {
      if (!ev.data) continue;
      const data = parseEventJson(this.name, ev.data) as Record<string, unknown> & { type?: string };
      switch (data.type ?? ev.event) {
        case 'message_start': {
          const m = data.message as { usage?: AnthropicUsage } | undefined;
          if (m?.usage) usage = { ...m.usage };
          yield chunk({ role: 'assistant', content: '' });
          break;
        }
        case 'content_block_start': {
          const index = Number(data.index);
          const b = data.content_block as Block;
          if (b.type === 'tool_use') {
            if (jsonTool && b.name === jsonTool.name) {
              blocks.set(index, { kind: 'json', buffer: '' });
              answered = true;
            } else {
              const ti = toolCount++;
              blocks.set(index, { kind: 'tool', index: ti });
              yield chunk({ tool_calls: [{ index: ti, id: String(b.id), type: 'function', function: { name: String(b.name), arguments: '' } }] });
            }
          } else if (b.type === 'text') {
            blocks.set(index, { kind: 'text' });
            if (typeof b.text === 'string' && b.text) yield chunk({ content: b.text });
          }
          break;
        }
        case 'content_block_delta': {
          const index = Number(data.index);
          const d = data.delta as { type?: string; text?: string; partial_json?: string };
          const b = blocks.get(index);
          if (d.type === 'text_delta' && typeof d.text === 'string') yield chunk({ content: d.text });
          else if (d.type === 'input_json_delta' && typeof d.partial_json === 'string' && b) {
            if (b.kind === 'tool') yield chunk({ tool_calls: [{ index: b.index, function: { arguments: d.partial_json } }] });
            else if (b.kind === 'json') {
              if (jsonTool?.wrapped) b.buffer += d.partial_json;
              else if (d.partial_json) yield chunk({ content: d.partial_json });
            }
          }
          break;
        }
        case 'content_block_stop': {
          const b = blocks.get(Number(data.index));
          if (b?.kind === 'json' && jsonTool?.wrapped) {
            let input: unknown = {};
            try {
              input = JSON.parse(b.buffer || '{}');
            } catch {
              input = {};
            }
            yield chunk({ content: jsonAnswer(input, jsonTool) });
          }
          break;
        }
        case 'message_delta': {
          const d = data.delta as { stop_reason?: string | null } | undefined;
          stopReason = d?.stop_reason ?? stopReason;
          const u = data.usage as AnthropicUsage | undefined;
          if (u) usage = { ...usage, ...Object.fromEntries(Object.entries(u).filter(([, v]) => v != null)) };
          break;
        }
        case 'message_stop': {
          const calledTools = toolCount > 0 && !answered;
          yield chunk({}, finishOf(stopReason, calledTools));
          if (usage) yield { ...base, choices: [], usage: usageOf(usage) };
          return;
        }
        case 'error': {
          const e = data.error as { type?: string; message?: string } | undefined;
          throw new ProviderError(this.name, 502, e?.message ?? 'The anthropic provider reported an error mid-stream', e?.type);
        }
        default:
          break; // ping and future event types
      }
    }
  }
}
