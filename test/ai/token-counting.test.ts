// The gateway counts prompt tokens on a thread of its own (docs/architecture.md, Credit ledgers): tenant text
// never reaches the tokenizer on the event loop. This file replaces the main thread's tokenizer with one that
// throws, so a count made there fails the request; the figures must still be the tokenizer's.
import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it, vi } from 'vitest';
import { aiSuite, type AiTestServer } from './ai-server.js';
import type { FakeProviders } from '../support/fake-providers.js';
import { costNano } from '../../src/ai/catalog.js';
import * as ledger from '../../src/ai/credit-ledger.js';
import { usdToNano } from '../../src/ai/money.js';

vi.mock('../../src/tokenizer.js', () => ({
  countTokens: () => {
    throw new Error('the tokenizer ran on the event loop');
  },
}));

let t: AiTestServer;
let fake: FakeProviders;

aiSuite({
  // A generous wait for the count: the figures below are the tokenizer's, not the fallback's, however busy the machine.
  env: { WEFT_AI_TOKEN_COUNT_TIMEOUT_MS: '60000' },
  ready: async (server, providers) => {
    t = server;
    fake = providers;
    const account = `workspace:${t.workspaceId}`;
    await ledger.ensureAccount(t.db, account, 0);
    await ledger.grant(t.db, account, ledger.usdToNano(5), 'test');
  },
});

const gpt4o = { inputPerMillion: 2.5, outputPerMillion: 10 };
/** A prompt far past the bytes a deposit counts without tokenizing, with far fewer tokens than bytes. */
const longText = 'the quick brown fox jumps over the lazy dog. '.repeat(2_000);
/** The chat framing the gateway adds to a prompt of one message. */
const framing = 3 + 4;

/** The request's record, once its settlement is written (within the settle window). */
async function settled(id: string) {
  for (let i = 0; i < 500; i++) {
    const rows = await t.db.query<{ deposit_nano: number; prompt_tokens: number; completion_tokens: number; usage_estimated: boolean }>(
      "SELECT deposit_nano::int8 AS deposit_nano, prompt_tokens, completion_tokens, usage_estimated FROM ai_requests WHERE id = $1 AND status = 'settled'", [id]);
    if (rows[0]) return rows[0];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the settlement of ${id} was not written`);
}

describe('prompt tokens counted off the event loop', () => {
  it("a long prompt's deposit is its token count, not its bytes", async () => {
    const r = await t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: longText }], max_tokens: 10 });
    expect(r.status).toBe(200);
    const row = await settled((r.body as { id: string }).id);
    const tokens = framing + countTokens(longText);
    expect(tokens * 3).toBeLessThan(Buffer.byteLength(longText)); // bytes would be a much larger deposit
    const expected = Math.max(usdToNano(t.config.ai.minDepositUsd), costNano(gpt4o, Math.ceil(tokens * 1.1), 10));
    expect(Number(row.deposit_nano)).toBe(expected);
  });

  it('an answer without usage is billed by counts made off the event loop', async () => {
    const answer = 'Certainly: here is a summary of the text you sent, in a few words.';
    fake.handler = () => ({ text: answer, usage: null });
    const r = await t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: longText }], max_tokens: 100 });
    expect(r.status).toBe(200);
    const row = await settled((r.body as { id: string }).id);
    expect(row.usage_estimated).toBe(true);
    expect(row.prompt_tokens).toBe(framing + countTokens(longText));
    expect(row.completion_tokens).toBe(countTokens(answer));
  });
});
