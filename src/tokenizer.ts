import { createRequire } from 'node:module';

// The tokenizer's ranks take about 75 MB and 170 ms to load: they load on the first count (an AI deposit,
// a knowledge chunk), so an instance that uses neither never carries them and starts without them.
type CountTokens = typeof import('gpt-tokenizer').countTokens;
let counter: CountTokens | undefined;

// Special-token text such as "<|endoftext|>" is ordinary text here, not an error.
const ENCODE_OPTIONS = { disallowedSpecial: new Set<string>() };

/** Tokens of `text` in the o200k encoding (gpt-tokenizer's default). */
export function countTokens(text: string): number {
  counter ??= (createRequire(import.meta.url)('gpt-tokenizer') as typeof import('gpt-tokenizer')).countTokens;
  return counter(text, ENCODE_OPTIONS);
}
