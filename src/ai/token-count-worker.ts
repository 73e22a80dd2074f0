// The thread that counts prompt tokens for the AI gateway (ai/token-counter.ts): o200k BPE over tenant text,
// whose cost the tenant chooses, kept off the event loop.
import { parentPort } from 'node:worker_threads';
import { countTokens } from '../tokenizer.js';

export interface TokenCountRequest { id: number; texts: string[] }
export interface TokenCountReply { id: number; counts?: number[]; error?: string }

parentPort?.on('message', (msg: TokenCountRequest) => {
  let reply: TokenCountReply;
  try {
    reply = { id: msg.id, counts: msg.texts.map((t) => countTokens(t)) };
  } catch (err) {
    reply = { id: msg.id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort?.postMessage(reply);
});
