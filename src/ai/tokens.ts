import { countTokens } from '../tokenizer.js';
import type { ChatCompletion, ChatMessage, ChatRequest, Usage } from './providers/types.js';

// Token estimates: the deposit of a request (its prompt), and the usage of an answer whose provider
// reported none (the text generated).

/** Images are not tokenized; this is the estimate per image part (a 1024x1024 tile set). */
const IMAGE_TOKENS = 1_100;
/** Texts longer than this are estimated by length (3 characters a token, generous) instead of tokenized. */
const TOKENIZE_LIMIT = 200_000;

export function estimateTextTokens(text: string): number {
  if (!text) return 0;
  if (text.length > TOKENIZE_LIMIT) return Math.ceil(text.length / 3);
  return countTokens(text);
}

function contentTokens(content: ChatMessage['content']): number {
  if (typeof content === 'string') return estimateTextTokens(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (part.type === 'text' && typeof part.text === 'string') n += estimateTextTokens(part.text);
    else if (part.type === 'image_url') n += IMAGE_TOKENS;
    else n += estimateTextTokens(JSON.stringify(part));
  }
  return n;
}

/** Prompt tokens of a request, estimated with the o200k tokenizer (chat framing included). */
export function estimatePromptTokens(request: ChatRequest): number {
  let n = 3;
  for (const m of request.messages) {
    n += 4 + contentTokens(m.content);
    if (m.tool_calls) n += estimateTextTokens(JSON.stringify(m.tool_calls));
    if (m.name) n += 1;
  }
  if (request.tools && request.tools.length > 0) n += estimateTextTokens(JSON.stringify(request.tools)) + 10;
  if (request.response_format?.type === 'json_schema') n += estimateTextTokens(JSON.stringify(request.response_format.json_schema));
  return n;
}

/** The text and tool calls of a completion (what its completion tokens were spent on). */
export function completionText(c: ChatCompletion): string {
  let s = '';
  for (const ch of c.choices) {
    if (typeof ch.message.content === 'string') s += ch.message.content;
    for (const t of ch.message.tool_calls ?? []) s += t.function.name + t.function.arguments;
  }
  return s;
}

export const validUsage = (u: Usage | null | undefined): u is Usage =>
  Boolean(u) && Number.isFinite(u!.prompt_tokens) && Number.isFinite(u!.completion_tokens) && u!.prompt_tokens >= 0 && u!.completion_tokens >= 0;
