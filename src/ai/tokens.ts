import type { ChatCompletion, ChatRequest, Usage } from './providers/types.js';
import type { TokenCounter } from './token-counter.js';

// Token estimates: the deposit of a request (its prompt), and the usage of an answer whose provider
// reported none (the text generated). Texts are tokenized on the counter's thread, never on the event loop
// (ai/token-counter.ts); where it cannot answer, a bound that needs no tokenizer stands in.

/** Images are not tokenized; this is the estimate per image part (a 1024x1024 tile set). */
const IMAGE_TOKENS = 1_100;
/** Texts longer than this are not tokenized: a deposit counts their UTF-8 bytes, an estimate 3 characters a token. */
const TOKENIZE_LIMIT = 200_000;

/**
 * A deposit counts a text of at most this many UTF-8 bytes as that many tokens instead of tokenizing it:
 * an upper bound (an o200k token is at least one byte), and tokenizing was most of the gateway's CPU per
 * request (bench/RESULTS.md, ai-gateway-overhead). Above it the over-deposit would matter: tokenized.
 */
const DEPOSIT_BYTES_AS_TOKENS = 2048;

/** The texts a prompt's tokens are counted over, and its tokens that need no text (chat framing, images). */
function promptParts(request: ChatRequest): { texts: string[]; fixed: number } {
  const texts: string[] = [];
  let fixed = 3;
  for (const m of request.messages) {
    fixed += 4;
    const content = m.content;
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      for (const part of content) {
        if (part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
        else if (part.type === 'image_url') fixed += IMAGE_TOKENS;
        else texts.push(JSON.stringify(part));
      }
    }
    if (m.tool_calls) texts.push(JSON.stringify(m.tool_calls));
    if (m.name) fixed += 1;
  }
  if (request.tools && request.tools.length > 0) {
    texts.push(JSON.stringify(request.tools));
    fixed += 10;
  }
  if (request.response_format?.type === 'json_schema') texts.push(JSON.stringify(request.response_format.json_schema));
  return { texts, fixed };
}

/**
 * Tokens of all `texts`: `known` answers the ones it can without the tokenizer, the counter's thread the rest in
 * one message, and `fallback` those it could not count.
 */
async function countTexts(
  texts: readonly string[], counter: TokenCounter, known: (text: string) => number | undefined, fallback: (text: string) => number,
): Promise<number> {
  let n = 0;
  const rest: string[] = [];
  for (const text of texts) {
    if (!text) continue;
    const k = known(text);
    if (k === undefined) rest.push(text);
    else n += k;
  }
  if (rest.length === 0) return n;
  const counts = await counter.count(rest);
  rest.forEach((text, i) => (n += counts ? counts[i] : fallback(text)));
  return n;
}

const utf8Bytes = (text: string): number => Buffer.byteLength(text);
/** Past the tokenize limit, and where the counter cannot answer: 3 characters a token. */
const byLength = (text: string): number => Math.ceil(text.length / 3);

/**
 * Prompt tokens a deposit counts: never fewer than the prompt holds. A short text counts its UTF-8 bytes; a
 * longer one is tokenized; a text the counter cannot count (or past the tokenize limit) counts its bytes.
 */
export async function depositPromptTokens(request: ChatRequest, counter: TokenCounter): Promise<number> {
  const { texts, fixed } = promptParts(request);
  return fixed + await countTexts(texts, counter, (t) => {
    const bytes = utf8Bytes(t);
    return bytes <= DEPOSIT_BYTES_AS_TOKENS || t.length > TOKENIZE_LIMIT ? bytes : undefined;
  }, utf8Bytes);
}

/**
 * The most tokens one count of a usage may say: the settlement's token columns are int4, and no completion
 * comes near it. A provider's count past it (or negative, fractional, not a number) is not a count: the usage
 * is estimated instead, as for an answer without usage. Estimates are capped there too: the cost of that many
 * tokens is far beyond any deposit, so the cap never lowers what is charged.
 */
export const MAX_USAGE_TOKENS = 2 ** 31 - 1;

const capped = (tokens: number): number => Math.min(tokens, MAX_USAGE_TOKENS);

/** Prompt tokens of a request, estimated with the o200k tokenizer (chat framing included). */
export async function estimatePromptTokens(request: ChatRequest, counter: TokenCounter): Promise<number> {
  const { texts, fixed } = promptParts(request);
  return capped(fixed + await estimateTexts(texts, counter));
}

/** Tokens of a generated text, estimated with the o200k tokenizer. */
export async function estimateTextTokens(text: string, counter: TokenCounter): Promise<number> {
  return capped(await estimateTexts([text], counter));
}

function estimateTexts(texts: readonly string[], counter: TokenCounter): Promise<number> {
  return countTexts(texts, counter, (t) => (t.length > TOKENIZE_LIMIT ? byLength(t) : undefined), byLength);
}

/**
 * The text a stream generated, kept only as far as its estimate needs it: up to the tokenize limit the text
 * (tokenized at the end), past it only its length (3 characters a token, as `estimateTextTokens` counts such
 * a text). So a stream that runs on holds at most that many characters, and its estimate is the same.
 */
export class GeneratedText {
  private parts: string[] = [];
  private chars = 0;

  add(text: string): void {
    if (!text) return;
    this.chars += text.length;
    if (this.chars > TOKENIZE_LIMIT) this.parts = [];
    else this.parts.push(text);
  }

  get empty(): boolean {
    return this.chars === 0;
  }

  async estimateTokens(counter: TokenCounter): Promise<number> {
    if (this.chars > TOKENIZE_LIMIT) return capped(Math.ceil(this.chars / 3));
    return estimateTextTokens(this.parts.join(''), counter);
  }
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

const validCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && n <= MAX_USAGE_TOKENS;

/** A usage the gateway bills as reported: both counts whole numbers from 0 to MAX_USAGE_TOKENS. */
export const validUsage = (u: Usage | null | undefined): u is Usage =>
  typeof u === 'object' && u !== null && validCount(u.prompt_tokens) && validCount(u.completion_tokens);
