import OpenAI from 'openai';
import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAiServer, type AiTestServer } from './ai-server.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import * as ledger from '../../src/ai/credit-ledger.js';
import { costNano } from '../../src/ai/catalog.js';
import { AiGateway } from '../../src/ai/gateway.js';
import { HeldCreditLedger } from '../../src/ai/held-ledger.js';
import type { TokenCounter } from '../../src/ai/token-counter.js';
import { depositPromptTokens, estimatePromptTokens } from '../../src/ai/tokens.js';
import { periodCost, recordCost, UsageRecorder } from '../../src/limits/usage.js';

let t: AiTestServer;
let fake: FakeProviders;
let account: string;

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startAiServer({ env: { ...fake.env } });
  account = `workspace:${t.workspaceId}`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.handler = () => ({ text: 'ok', usage: { prompt: 100, completion: 50 } });
});

const db = () => t.db;
const hi = [{ role: 'user' as const, content: 'hi' }];
// The gateway's view: on the embedded database, deposits of requests in flight are held in memory.
const balance = async () => (await t.gateway.balance(account)) ?? { balanceNano: 0, reservedNano: 0 };
async function setBalance(usd: number) {
  await ledger.ensureAccount(db(), account, 0);
  const diff = ledger.usdToNano(usd) - (await balance()).balanceNano;
  if (diff !== 0) await ledger.grant(db(), account, diff, 'test');
}
const gpt4o = { inputPerMillion: 2.5, outputPerMillion: 10 };
/** The tokenizer in this thread: the figures the server's counting thread must agree with. */
const inThread: TokenCounter = { count: async (texts) => texts.map((text) => countTokens(text)), close: async () => undefined };

async function waitFor<T>(fn: () => Promise<T | undefined>, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every usage event of an account, USD. */
async function usageTotal(acct: string): Promise<number> {
  const r = await db().query<{ s: number }>('SELECT COALESCE(sum(amount_usd), 0)::float8 AS s FROM usage_events WHERE account = $1', [acct]);
  return Number(r[0].s);
}

async function ledgerSum(): Promise<number> {
  const r = await db().query<{ s: number | null }>('SELECT COALESCE(sum(amount_nano), 0)::int8 AS s FROM ai_credit_ledger WHERE account = $1', [account]);
  return Number(r[0].s);
}

describe('concurrency', () => {
  it('50 parallel requests never spend beyond the balance, and the ledger adds up', async () => {
    await setBalance(0.1);
    const start = await balance();
    const startUsage = await usageTotal(account);
    fake.handler = () => ({ text: 'ok', delayMs: 80, usage: { prompt: 100, completion: 500 } });
    const body = { model: 'gpt-4o', messages: hi, max_tokens: 1000 };
    const results = await Promise.all(Array.from({ length: 50 }, () => t.call('POST', '/api/v1/ai/chat/completions', body)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(results.filter((r) => r.status !== 200 && r.status !== 402).map((r) => `${r.status} ${r.text}`)).toEqual([]);
    expect(ok.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect(r.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_credits' });

    const cost = costNano(gpt4o, 100, 500); // $0.00525 each
    const deposit = Math.max(...(await db().query<{ d: number }>("SELECT deposit_nano::int8 AS d FROM ai_requests WHERE account = $1 AND model = 'gpt-4o'", [account])).map((r) => Number(r.d)));
    // The deposit is about $0.01: at most 10 fit into $0.10 at once.
    expect(deposit).toBeGreaterThan(10_000_000);
    const end = await balance();
    expect(end.reservedNano).toBe(0);
    expect(end.balanceNano).toBeGreaterThanOrEqual(-deposit);
    expect(end.balanceNano).toBe(start.balanceNano - ok.length * cost);
    expect(await ledgerSum()).toBe(end.balanceNano);
    for (const r of ok) expect(r.headers.get('x-credits-used')).toBe('0.005250');

    // Every success has exactly one reserve and one settle entry; a refusal has none.
    const entries = await db().query<{ request_id: string; kinds: string }>(
      "SELECT request_id, string_agg(kind, ',' ORDER BY id) AS kinds FROM ai_credit_ledger WHERE account = $1 AND request_id IS NOT NULL GROUP BY request_id",
      [account],
    );
    const byId = new Map(entries.map((e) => [e.request_id, e.kinds]));
    for (const r of ok) expect(byId.get(r.body.id)).toBe('reserve,settle');
    const usage = await usageTotal(account);
    expect(usage - startUsage).toBeCloseTo((ok.length * cost) / 1e9, 9);
  });

  it('a grant is seen by the next request (the balance a deposit is checked against is never stale)', async () => {
    const body = { model: 'gpt-4o', messages: hi, max_tokens: 1000 };
    await setBalance(0.001);
    expect((await t.call('POST', '/api/v1/ai/chat/completions', body)).status).toBe(402);
    await ledger.grant(db(), account, ledger.usdToNano(1), 'test');
    const ok = await t.call('POST', '/api/v1/ai/chat/completions', body);
    expect(ok.status).toBe(200);
    // And taken away again: the next request is refused, not admitted against the old figure.
    await ledger.grant(db(), account, -((await balance()).balanceNano - 1000), 'test');
    expect((await t.call('POST', '/api/v1/ai/chat/completions', body)).status).toBe(402);
    expect(await ledgerSum()).toBe((await balance()).balanceNano);
  });

  it('a balance covering one deposit admits one of two simultaneous requests', async () => {
    const body = { model: 'gpt-4o', messages: hi, max_tokens: 1000 };
    const deposit = costNano(gpt4o, Math.ceil((await depositPromptTokens(body, inThread)) * 1.1), 1000);
    await setBalance((deposit + 1000) / 1e9);
    fake.handler = () => ({ text: 'ok', delayMs: 100, usage: { prompt: 10, completion: 10 } });
    const [a, b] = await Promise.all([t.call('POST', '/api/v1/ai/chat/completions', body), t.call('POST', '/api/v1/ai/chat/completions', body)]);
    expect([a.status, b.status].sort()).toEqual([200, 402]);
  });
});

// Both ledgers on both databases: the embedded server uses the held one, PostgreSQL the other
// (docs/architecture.md, Credit ledgers), and each must keep the same promises whatever the database.
const batchLedgers = [
  { kind: 'in the database', suffix: 'b', make: (): ledger.RequestLedger => new ledger.CreditLedger(db()) },
  {
    kind: 'held in memory',
    suffix: 'c',
    make: () => new HeldCreditLedger(db(), {
      ensureAccount: (acct) => ledger.ensureAccount(db(), acct, 0),
      readBalance: async (acct) => (await ledger.getBalance(db(), acct))?.balanceNano,
    }),
  },
];

describe('batched ledger writes', () => {
  for (const { kind, suffix, make } of batchLedgers) {
    it(`${kind}: reservations and settlements issued together keep every account within its balance and the ledger chained`, async () => {
      const l = make();
      const accounts = [`workspace:00000000-0000-4000-8000-0000000000${suffix}1`, `user:00000000-0000-4000-8000-0000000000${suffix}2`];
      const balanceOf = async (acct: string) => {
        const row = (await ledger.getBalance(db(), acct))!;
        const held = l.heldNano(acct);
        return { balanceNano: row.balanceNano - held, reservedNano: row.reservedNano + held };
      };
      await ledger.grant(db(), accounts[0], 1_000_000, 'test');
      await ledger.grant(db(), accounts[1], 350_000, 'test');
      const deposits = Array.from({ length: 40 }, (_, i) => ({ account: accounts[i % 2], deposit: 50_000 + (i % 5) * 20_000, id: `chatcmpl-batch-${suffix}-${i}` }));
      const results = await Promise.all(deposits.map((d) => l.reserve({
        id: d.id, account: d.account, depositNano: d.deposit, model: 'gpt-4o', provider: 'openai', stream: false, source: 'api',
      })));
      // Some are refused: the deposits together exceed both balances.
      expect(results.some((r) => !r.ok)).toBe(true);
      for (const [ai, acct] of accounts.entries()) {
        const admitted = deposits.filter((d, i) => d.account === acct && results[i].ok).reduce((n, d) => n + d.deposit, 0);
        const b = await balanceOf(acct);
        expect(b.reservedNano).toBe(admitted);
        expect(b.balanceNano).toBe([1_000_000, 350_000][ai] - admitted);
        for (const [i, r] of results.entries()) if (!r.ok && deposits[i].account === acct) expect(r.balanceNano).toBeLessThan(deposits[i].deposit);
      }
      const admittedIds = deposits.filter((_, i) => results[i].ok);
      const settled = await Promise.all(admittedIds.map((d, i) => l.settle(d.id, {
        costNano: i * 1000, promptTokens: 1, completionTokens: 1, estimated: false, outcome: 'completed',
      })));
      expect(settled.every((x) => x !== undefined)).toBe(true);
      for (const acct of accounts) {
        const rows = await db().query<{ amount_nano: number; balance_after_nano: number }>(
          'SELECT amount_nano::int8 AS amount_nano, balance_after_nano::int8 AS balance_after_nano FROM ai_credit_ledger WHERE account = $1 ORDER BY id', [acct]);
        let running = 0;
        for (const r of rows) {
          running += Number(r.amount_nano);
          expect(Number(r.balance_after_nano)).toBe(running);
        }
        const b = await balanceOf(acct);
        expect(b.reservedNano).toBe(0);
        expect(b.balanceNano).toBe(running);
      }
    });
  }
});

describe('streaming and disconnects', () => {
  beforeAll(async () => setBalance(5));

  it('a client that disconnects mid-stream is charged for what was generated; nothing stays reserved', async () => {
    const words = Array.from({ length: 20 }, (_, i) => `w${String.fromCharCode(97 + i)} `); // 3 characters each: one word a piece
    fake.handler = () => ({ text: words.join(''), pieces: 20, hangAfterPieces: 5, usage: { prompt: 100, completion: 50 } });
    const body = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'Count slowly.' }], stream: true, max_tokens: 500 };
    const before = await balance();
    const aborted = fake.abortedStreams;
    const ctrl = new AbortController();
    const res = await fetch(`${t.url}/api/v1/ai/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': t.apiKey }, body: JSON.stringify(body), signal: ctrl.signal,
    });
    expect(res.status).toBe(200);
    // The headers carry the deposit taken so far.
    const deposit = ledger.usdToNano(Number(res.headers.get('x-credits-used')));
    expect(deposit).toBeGreaterThan(0);
    const reader = res.body!.getReader();
    let received = '';
    while ((received.match(/"content":"w/g) ?? []).length < 5) {
      const { value } = await reader.read();
      received += new TextDecoder().decode(value);
    }
    ctrl.abort();
    await reader.cancel().catch(() => undefined);
    const id = /"id":"(chatcmpl-[^"]+)"/.exec(received)?.[1];

    const row = await waitFor(async () => {
      const r = await db().query<{ status: string; outcome: string; cost_nano: number; prompt_tokens: number; completion_tokens: number; usage_estimated: boolean }>(
        'SELECT status, outcome, cost_nano::int8 AS cost_nano, prompt_tokens, completion_tokens, usage_estimated FROM ai_requests WHERE id = $1',
        [id],
      );
      return r[0]?.status !== 'reserved' ? r[0] : undefined;
    }, 'the stream to settle');
    expect(row.status).toBe('settled');
    expect(row.outcome).toBe('aborted');
    expect(row.usage_estimated).toBe(true);
    const generated = words.slice(0, 5).join('');
    expect(row.completion_tokens).toBe(countTokens(generated));
    expect(row.prompt_tokens).toBe(await estimatePromptTokens(body, inThread));
    expect(Number(row.cost_nano)).toBe(costNano(gpt4o, row.prompt_tokens, row.completion_tokens));
    const after = await balance();
    expect(after.reservedNano).toBe(0);
    expect(after.balanceNano).toBe(before.balanceNano - Number(row.cost_nano));
    expect(await ledgerSum()).toBe(after.balanceNano);
    // The upstream call was cancelled too.
    await waitFor(async () => (fake.abortedStreams > aborted ? true : undefined), 'the upstream stream to close');
  });

  it('a stream that completes settles the reported usage and sends the figures as trailers', async () => {
    fake.handler = () => ({ text: 'alpha beta gamma', pieces: 3, usage: { prompt: 1000, completion: 500 } });
    const before = await balance();
    const http = await import('node:http');
    const { trailers, status, body } = await new Promise<{ trailers: NodeJS.Dict<string>; status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${t.url}/api/v1/ai/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${t.apiKey}` } }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ trailers: res.trailers, status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'gpt-4o', messages: hi, stream: true, max_tokens: 1000 }));
    });
    expect(status).toBe(200);
    expect(body.trim().endsWith('data: [DONE]')).toBe(true);
    expect(trailers['x-credits-used']).toBe('0.007500');
    const after = await balance();
    expect(trailers['x-credits-remaining']).toBe(ledger.formatUsd(after.balanceNano));
    expect(before.balanceNano - after.balanceNano).toBe(7_500_000);
    expect(after.reservedNano).toBe(0);
  });

  it('a provider failing mid-stream ends the stream with an error event and settles the partial output', async () => {
    fake.handler = () => ({ text: 'one two three four', pieces: 4, failAfterPieces: 2 });
    const client = new OpenAI({ baseURL: `${t.url}/api/v1/ai`, apiKey: t.apiKey, maxRetries: 0 });
    const s = await client.chat.completions.create({ model: 'gpt-4o', messages: hi, stream: true, max_tokens: 100 });
    let text = '';
    let id = '';
    await expect((async () => {
      for await (const c of s) {
        id = c.id;
        text += c.choices[0]?.delta?.content ?? '';
      }
    })()).rejects.toThrow(/error while processing/);
    expect(text).toBe('one two th'); // pieces of 5 characters, two of them
    const row = await waitFor(async () => {
      const r = await db().query<{ status: string; outcome: string; completion_tokens: number }>(
        'SELECT status, outcome, completion_tokens FROM ai_requests WHERE id = $1', [id]);
      return r[0]?.status !== 'reserved' ? r[0] : undefined;
    }, 'settle');
    expect(row).toMatchObject({ status: 'settled', outcome: 'failed', completion_tokens: countTokens('one two th') });
    expect((await balance()).reservedNano).toBe(0);
  });

  it('a provider failing before any output releases the whole deposit', async () => {
    for (const model of ['gpt-4o', 'claude-sonnet-4-5', 'gemini-2.5-flash']) {
      fake.handler = () => ({ text: 'never sent', failAfterPieces: 0 });
      const before = await balance();
      const res = await fetch(`${t.url}/api/v1/ai/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': t.apiKey },
        body: JSON.stringify({ model, messages: hi, stream: true, max_tokens: 100 }),
      });
      const text = await res.text();
      expect(text).toMatch(/"error":\{"message":/);
      const row = await waitFor(async () => {
        const r = await db().query<{ status: string }>('SELECT status FROM ai_requests WHERE account = $1 AND model = $2 ORDER BY created_at DESC LIMIT 1', [account, model]);
        return r[0]?.status !== 'reserved' ? r[0] : undefined;
      }, 'release');
      expect(row.status).toBe('released');
      expect((await balance()).balanceNano).toBe(before.balanceNano);
    }
  });
});

describe('timeouts, abandoned deposits and usage events', () => {
  it('a provider slower than WEFT_AI_TIMEOUT_MS gives 504 and the deposit back', async () => {
    const slow = await startAiServer({ env: { ...fake.env, WEFT_AI_TIMEOUT_MS: '1000', WEFT_AI_STARTING_CREDITS_USD: '1' } });
    try {
      fake.handler = () => ({ text: 'late', delayMs: 1500 });
      const r = await slow.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: hi });
      expect(r.status).toBe(504);
      expect(r.body.error).toMatchObject({ type: 'server_error', code: 'provider_timeout' });
      const c = await slow.call('GET', '/api/v1/ai/credits');
      expect(c.body).toMatchObject({ balanceUsd: 1, reservedUsd: 0 });
    } finally {
      await slow.close();
    }
  });

  it('releases reservations a dead process left behind (deposits held in the database)', async () => {
    await setBalance(1);
    // The gateway on an embedded database holds deposits in memory; this is the ledger that writes them down.
    const inDatabase = new ledger.CreditLedger(db());
    const r = await inDatabase.reserve({ id: 'chatcmpl-orphan', account, depositNano: 5_000_000, model: 'gpt-4o', provider: 'openai', stream: false, source: 'api' });
    expect(r.ok).toBe(true);
    expect((await balance()).reservedNano).toBe(5_000_000);
    expect(await inDatabase.releaseAbandoned(60_000)).toBe(0);
    await db().query("UPDATE ai_requests SET created_at = now() - interval '1 hour' WHERE id = 'chatcmpl-orphan'");
    expect(await t.gateway.ledger.releaseAbandoned(60_000)).toBe(1);
    const b = await balance();
    expect(b.reservedNano).toBe(0);
    expect(b.balanceNano).toBe(ledger.usdToNano(1));
    expect(await inDatabase.settle('chatcmpl-orphan', { costNano: 1, promptTokens: 1, completionTokens: 1, estimated: false, outcome: 'completed' })).toBeUndefined();
  });

  it('usage events: one per key, billed in the period of the usage clock (the limits service\'s)', async () => {
    const acct = `workspace:00000000-0000-4000-8000-00000000cafe`;
    const now = new Date();
    expect(await periodCost(db(), acct, now)).toBe(0);
    expect(await recordCost(db(), { account: acct, amountUsd: 0.25, source: 'test', idempotencyKey: 'k1', at: now })).toBe(true);
    expect(await recordCost(db(), { account: acct, amountUsd: 0.25, source: 'test', idempotencyKey: 'k1', at: now })).toBe(false);
    expect(await recordCost(db(), { account: acct, amountUsd: 0.125, source: 'test', idempotencyKey: 'k2', at: now })).toBe(true);
    expect(await recordCost(db(), { account: acct, amountUsd: 9, source: 'test', idempotencyKey: 'old', at: new Date('2020-01-15T00:00:00Z') })).toBe(true);
    expect(await periodCost(db(), acct, now)).toBeCloseTo(0.375, 9);
    expect(await periodCost(db(), acct, new Date('2020-01-31T23:59:59Z'))).toBeCloseTo(9, 9);
    expect(await periodCost(db(), acct, new Date('2020-02-01T00:00:00Z'))).toBe(0);
    const period = await db().query<{ p: string }>("SELECT period::text AS p FROM usage_events WHERE idempotency_key = 'old'");
    expect(period[0].p).toBe('2020-01-01');

    // The gateway's settlements take their period from the usage recorder's clock, not the database's.
    const clock = { now: () => Date.parse('2031-07-31T23:59:59.900Z') };
    const gateway = new AiGateway(db(), t.config.ai, { usage: new UsageRecorder(clock) });
    await ledger.grant(db(), acct, 1_000_000_000, 'test');
    expect((await gateway.ledger.reserve({ id: 'chatcmpl-clock', account: acct, depositNano: 500_000, model: 'gpt-4o', provider: 'openai', stream: false, source: 'api' })).ok).toBe(true);
    await gateway.ledger.settle('chatcmpl-clock', { costNano: 250_000, promptTokens: 10, completionTokens: 10, estimated: false, outcome: 'completed' });
    const ev = await db().query<{ p: string; amount: string }>("SELECT period::text AS p, amount_usd::text AS amount FROM usage_events WHERE idempotency_key = 'ai:chatcmpl-clock'");
    expect(ev[0]).toEqual({ p: '2031-07-01', amount: '0.000250000' });
    expect(await periodCost(db(), acct, new Date(clock.now()))).toBeCloseTo(0.00025, 9);
  });

  it('formats USD with 6 decimals on integers', () => {
    expect(ledger.formatUsd(0)).toBe('0.000000');
    expect(ledger.formatUsd(2850)).toBe('0.000003');
    expect(ledger.formatUsd(2499)).toBe('0.000002');
    expect(ledger.formatUsd(7_500_000)).toBe('0.007500');
    expect(ledger.formatUsd(12_345_678_901)).toBe('12.345679');
    expect(ledger.formatUsd(-1_500_000)).toBe('-0.001500');
  });
});
