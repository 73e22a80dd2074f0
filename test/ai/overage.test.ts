// A provider reporting more usage than the request allowed (200,000 completion tokens for
// max_tokens: 16) once took a $0.10 balance to -$9.90 with 50 concurrent requests. A settlement
// now charges at most the deposit reserved for the request; the excess is an 'overage' ledger
// entry, and the balance never goes below zero, on every settlement path.
import { describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { costNano } from '../../src/ai/catalog.js';
import type { FakeProviders } from '../support/fake-providers.js';
import { aiSuite, type AiTestServer } from './ai-server.js';

let t: AiTestServer;
let fake: FakeProviders;
let account: string;

aiSuite({
  ready: (server, providers) => {
    t = server;
    fake = providers;
    account = `workspace:${t.workspaceId}`;
  },
});

const gpt4o = { inputPerMillion: 2.5, outputPerMillion: 10 };
const hi = [{ role: 'user' as const, content: 'hi' }];
const chat = (body: unknown) => t.call('POST', '/api/v1/ai/chat/completions', body);

async function setBalance(usd: number) {
  await ledger.ensureAccount(t.db, account, 0);
  const diff = ledger.usdToNano(usd) - ((await ledger.getBalance(t.db, account))?.balanceNano ?? 0);
  if (diff !== 0) await ledger.grant(t.db, account, diff, 'test');
}

/** Every ledger entry of the caller's account through the HTTP API (all pages), newest first. */
async function apiLedger(): Promise<{ id: string; kind: string; amountUsd: number; costUsd: number | null; requestId: string | null; balanceAfterUsd: number }[]> {
  const out = [];
  let cursor: string | undefined;
  for (;;) {
    const r = await t.call('GET', `/api/v1/ai/credits/ledger?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
    expect(r.status, r.text).toBe(200);
    out.push(...r.body.data);
    cursor = r.body.nextCursor;
    if (!cursor) return out;
  }
}

async function expectBooksBalanced() {
  // The database refuses a negative balance, so what can go wrong is the books disagreeing: the API's
  // figure, the balance row and the ledger's sum must be the same number.
  const credits = await t.call('GET', '/api/v1/ai/credits');
  expect(credits.body.reservedUsd).toBe(0);
  const b = (await ledger.getBalance(t.db, account))!;
  // The API shows the balance rounded to the micro-dollar.
  expect(Math.abs(credits.body.balanceUsd - b.balanceNano / 1e9)).toBeLessThanOrEqual(0.5e-6 + 1e-12);
  const sum = await t.db.query<{ s: number }>('SELECT COALESCE(sum(amount_nano), 0)::int8 AS s FROM ai_credit_ledger WHERE account = $1', [account]);
  expect(Number(sum[0].s)).toBe(b.balanceNano);
  // The last ledger entry carries the balance it left.
  const last = await t.db.query<{ b: number }>('SELECT balance_after_nano::int8 AS b FROM ai_credit_ledger WHERE account = $1 ORDER BY id DESC LIMIT 1', [account]);
  expect(Number(last[0].b)).toBe(b.balanceNano);
  return b.balanceNano;
}

async function waitFor<T>(fn: () => Promise<T | undefined>, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('usage reported beyond the deposit', () => {
  it('50 concurrent over-reporting requests: each is charged at most its deposit, the excess is an overage entry, the balance stays >= 0', async () => {
    await setBalance(0.1);
    const before = await ledger.getBalance(t.db, account);
    fake.handler = () => ({ text: 'ok', delayMs: 50, usage: { prompt: 100, completion: 200_000 } });
    const body = { model: 'gpt-4o', messages: hi, max_tokens: 16 };
    const results = await Promise.all(Array.from({ length: 50 }, () => chat(body)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length + results.filter((r) => r.status === 402).length).toBe(50);
    expect(ok.length).toBeGreaterThan(0);

    const actual = costNano(gpt4o, 100, 200_000); // $2.00025 each
    const rows = await t.db.query<{ id: string; deposit_nano: number; cost_nano: number; completion_tokens: number }>(
      "SELECT id, deposit_nano::int8 AS deposit_nano, cost_nano::int8 AS cost_nano, completion_tokens FROM ai_requests WHERE account = $1 AND status = 'settled'",
      [account],
    );
    expect(rows.length).toBe(ok.length);
    const byId = new Map(rows.map((r) => [r.id, r]));
    let charged = 0;
    for (const r of ok) {
      const row = byId.get(r.body.id)!;
      const deposit = Number(row.deposit_nano);
      expect(deposit).toBeLessThan(actual);
      expect(Number(row.cost_nano)).toBe(deposit); // charged: the deposit, not $2
      expect(row.completion_tokens).toBe(200_000); // what the provider reported is kept
      expect(r.headers.get('x-credits-used')).toBe(ledger.formatUsd(deposit));
      expect(r.body.usage.completion_tokens).toBe(200_000);
      charged += deposit;
    }
    const balance = await expectBooksBalanced();
    expect(balance).toBe(before!.balanceNano - charged);

    // The overage entries, through the API: one per request, amount 0, cost = what was not charged.
    const entries = await apiLedger();
    const overages = entries.filter((e) => e.kind === 'overage');
    expect(overages.length).toBe(ok.length);
    for (const r of ok) {
      const deposit = Number(byId.get(r.body.id)!.deposit_nano);
      const o = overages.find((e) => e.requestId === r.body.id)!;
      expect(o).toMatchObject({ amountUsd: 0, costUsd: ledger.roundUsd(actual - deposit) });
      const s = entries.find((e) => e.requestId === r.body.id && e.kind === 'settle')!;
      expect(s).toMatchObject({ amountUsd: 0, costUsd: ledger.roundUsd(deposit) });
      expect(Number(o.id)).toBeGreaterThan(Number(s.id)); // the overage follows its settlement
    }

    // The usage event records the real cost (the usage cap is about real spend), with what was billed.
    const ev = await t.db.query<{ amount: string; metadata: { billedUsd: number; overageUsd: number } }>(
      'SELECT amount_usd::text AS amount, metadata FROM usage_events WHERE idempotency_key = $1', [`ai:${ok[0].body.id}`]);
    const dep0 = Number(byId.get(ok[0].body.id)!.deposit_nano);
    expect(Number(ev[0].amount)).toBeCloseTo(actual / 1e9, 9);
    expect(ev[0].metadata.billedUsd).toBeCloseTo(dep0 / 1e9, 9);
    expect(ev[0].metadata.overageUsd).toBeCloseTo((actual - dep0) / 1e9, 9);
  });

  it('a balance of exactly one deposit, two concurrent over-reporting requests: one admitted, balance ends at 0, never below', async () => {
    fake.handler = () => ({ text: 'ok', delayMs: 50, usage: { prompt: 100, completion: 200_000 } });
    const body = { model: 'gpt-4o', messages: hi, max_tokens: 16 };
    await setBalance(0.01);
    const probe = await chat(body);
    const deposit = Number((await t.db.query<{ d: number }>('SELECT deposit_nano::int8 AS d FROM ai_requests WHERE id = $1', [probe.body.id]))[0].d);
    await setBalance(deposit / 1e9);
    const [a, b] = await Promise.all([chat(body), chat(body)]);
    expect([a.status, b.status].sort()).toEqual([200, 402]);
    expect(await expectBooksBalanced()).toBe(0);
  });

  it('a stream whose final usage exceeds the deposit settles the deposit (trailers) and records the overage', async () => {
    await setBalance(1);
    fake.handler = () => ({ text: 'alpha beta gamma', pieces: 3, usage: { prompt: 100, completion: 200_000 } });
    const http = await import('node:http');
    const { trailers, status, text } = await new Promise<{ trailers: NodeJS.Dict<string>; status: number; text: string }>((resolve, reject) => {
      const req = http.request(`${t.url}/api/v1/ai/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': t.apiKey } }, (res) => {
        let s = '';
        res.on('data', (d: Buffer) => (s += d.toString()));
        res.on('end', () => resolve({ trailers: res.trailers, status: res.statusCode ?? 0, text: s }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'gpt-4o', messages: hi, stream: true, max_tokens: 16, stream_options: { include_usage: true } }));
    });
    expect(status).toBe(200);
    expect(text).toContain('"completion_tokens":200000');
    const row = (await t.db.query<{ id: string; deposit_nano: number; cost_nano: number }>(
      'SELECT id, deposit_nano::int8 AS deposit_nano, cost_nano::int8 AS cost_nano FROM ai_requests WHERE account = $1 AND stream ORDER BY created_at DESC LIMIT 1', [account]))[0];
    expect(Number(row.cost_nano)).toBe(Number(row.deposit_nano));
    expect(trailers['x-credits-used']).toBe(ledger.formatUsd(Number(row.deposit_nano)));
    const overage = (await apiLedger()).find((e) => e.kind === 'overage' && e.requestId === row.id);
    expect(overage?.costUsd).toBe(ledger.roundUsd(costNano(gpt4o, 100, 200_000) - Number(row.deposit_nano)));
    await expectBooksBalanced();
  });

  it('a client leaving a stream that already ran past max_tokens is charged the deposit, the rest is overage', async () => {
    await setBalance(1);
    // The upstream ignores max_tokens: 5 pieces of ~400 tokens each before it hangs.
    const words = Array.from({ length: 2000 }, (_, i) => `word${i} `).join('');
    fake.handler = () => ({ text: words, pieces: 25, hangAfterPieces: 5, usage: { prompt: 100, completion: 50 } });
    const ctrl = new AbortController();
    const res = await fetch(`${t.url}/api/v1/ai/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': t.apiKey },
      body: JSON.stringify({ model: 'gpt-4o', messages: hi, stream: true, max_tokens: 16 }), signal: ctrl.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let received = '';
    // The first chunk carries the role (content ''), then one chunk per piece.
    while ((received.match(/"content":"/g) ?? []).length < 6) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early: ${received.slice(0, 500)}`);
      received += new TextDecoder().decode(value);
    }
    ctrl.abort();
    await reader.cancel().catch(() => undefined);
    const id = /"id":"(chatcmpl-[^"]+)"/.exec(received)?.[1];
    expect(id).toBeDefined();
    const row = await waitFor(async () => {
      const r = await t.db.query<{ id: string; status: string; outcome: string; deposit_nano: number; cost_nano: number; completion_tokens: number }>(
        'SELECT id, status, outcome, deposit_nano::int8 AS deposit_nano, cost_nano::int8 AS cost_nano, completion_tokens FROM ai_requests WHERE id = $1',
        [id],
      );
      return r[0]?.status !== 'reserved' ? r[0] : undefined;
    }, 'the stream to settle');
    expect(row).toMatchObject({ status: 'settled', outcome: 'aborted' });
    expect(row.completion_tokens).toBeGreaterThan(16);
    expect(Number(row.cost_nano)).toBe(Number(row.deposit_nano));
    const overage = (await apiLedger()).find((e) => e.kind === 'overage' && e.requestId === row.id);
    expect(overage?.costUsd).toBeGreaterThan(0);
    await expectBooksBalanced();
  });

  it('a usage report within the deposit leaves no overage entry', async () => {
    await setBalance(1);
    fake.handler = () => ({ text: 'ok', usage: { prompt: 5, completion: 10 } });
    const r = await chat({ model: 'gpt-4o', messages: hi, max_tokens: 16 });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-credits-used')).toBe(ledger.formatUsd(costNano(gpt4o, 5, 10)));
    expect((await apiLedger()).filter((e) => e.requestId === r.body.id).map((e) => e.kind)).toEqual(['settle', 'reserve']);
  });

  it('a grant cannot take a balance below zero, and the database refuses a negative balance', async () => {
    await setBalance(1);
    await expect(ledger.grant(t.db, account, -ledger.usdToNano(2), 'too much')).rejects.toThrow(/below zero/);
    expect((await ledger.getBalance(t.db, account))!.balanceNano).toBe(ledger.usdToNano(1));
    await expect(t.db.query('UPDATE ai_credit_balances SET balance_nano = -1 WHERE account = $1', [account])).rejects.toThrow(/ai_credit_balances_not_negative/);
    await expectBooksBalanced();
  });
});
