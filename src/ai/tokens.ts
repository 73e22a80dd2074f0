import { countTokens } from '../tokenizer.js';
import type { ChatCompletion, ChatMessage, ChatRequest, Usage } from './providers/types.js';

// Token estimates: the deposit of a request (its prompt), and the usage of an answer whose provider
// reported none (the text generated).

/** Images are not tokenized; this is the estimate per image part (a 1024x1024 tile set). */
const IMAGE_TOKENS = 1_100;
/** Texts longer than this are estimated by length (3 characters a token, generous) instead of tokenized. */
const TOKENIZE_LIMIT = 200_000;

/**
 * A deposit counts a text of at most this many UTF-8 bytes as that many tokens instead of tokenizing it:
 * an upper bound (an o200k token is at least one byte), and tokenizing was most of the gateway's CPU per
 * request (bench/RESULTS.md, ai-gateway-overhead). Above it the over-deposit would matter: tokenized.
 */
const DEPOSIT_BYTES_AS_TOKENS = 2048;

/** Tokens a deposit counts for `text`: never fewer than it holds for short texts, the tokenizer's count beyond. */
function depositTextTokens(text: string): number {
  if (!text) return 0;
  const bytes = Buffer.byteLength(text);
  return bytes <= DEPOSIT_BYTES_AS_TOKENS ? bytes : estimateTextTokens(text);
}

export function estimateTextTokens(text: string): number {
  if (!text) return 0;
  if (text.length > TOKENIZE_LIMIT) return Math.ceil(text.length / 3);
  return countTokens(text);
}

function contentTokens(content: ChatMessage['content'], tokens: (text: string) => number): number {
  if (typeof content === 'string') return tokens(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (part.type === 'text' && typeof part.text === 'string') n += tokens(part.text);
    else if (part.type === 'image_url') n += IMAGE_TOKENS;
    else n += tokens(JSON.stringify(part));
  }
  return n;
}

function promptTokens(request: ChatRequest, tokens: (text: string) => number): number {
  let n = 3;
  for (const m of request.messages) {
    n += 4 + contentTokens(m.content, tokens);
    if (m.tool_calls) n += tokens(JSON.stringify(m.tool_calls));
    if (m.name) n += 1;
  }
  if (request.tools && request.tools.length > 0) n += tokens(JSON.stringify(request.tools)) + 10;
  if (request.response_format?.type === 'json_schema') n += tokens(JSON.stringify(request.response_format.json_schema));
  return n;
}

/** Prompt tokens of a request, estimated with the o200k tokenizer (chat framing included). */
export function estimatePromptTokens(request: ChatRequest): number {
  return promptTokens(request, estimateTextTokens);
}

/** Prompt tokens a request's deposit counts: at least `estimatePromptTokens`, without tokenizing short texts. */
export function depositPromptTokens(request: ChatRequest): number {
  return promptTokens(request, depositTextTokens);
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
