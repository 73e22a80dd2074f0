// An upstream is trusted for neither the size of what it sends nor the usage it reports. Found by an audit:
// a stream line of 16 MB without a newline was rescanned from its start on every chunk (the event loop
// stalled for 35 s, 300-650 MB), a 400 MB answer was read whole (1.5 GB); usage of 1.5 or 1e15 tokens made the
// settlement's write fail (the request went free) and the answer a 500, 1e300 a 500 after charging and a usage
// total of 1e290 dollars for the workspace (its cap passed for good). An answer without finish_reason
// was a 500 after billing. These run through the HTTP API against an upstream speaking OpenAI's wire format.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { costNano } from '../../src/ai/catalog.js';
import { startAiServer, type AiTestServer } from './ai-server.js';

type Reply = (res: http.ServerResponse, body: { stream?: boolean; model?: string }) => void;

let t: AiTestServer;
let upstream: http.Server;
let reply: Reply;
let account: string;

const MB = 1024 * 1024;
const gpt4oMini = { inputPerMillion: 0.15, outputPerMillion: 0.6 };
const hi = [{ role: 'user' as const, content: 'hi' }];
const chat = (body: Record<string, unknown>) => t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o-mini', messages: hi, max_tokens: 64, ...body });

const sse = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
const chunk = (content: string, finish: string | null = null) =>
  ({ id: 'up', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content }, finish_reason: finish }] });
const completion = (usage: unknown, choice: Record<string, unknown> = {}) => ({
  id: 'up', object: 'chat.completion', created: 1700000000, model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'four words of text' }, finish_reason: 'stop', ...choice }],
  ...(usage === undefined ? {} : { usage }),
});
const json = (res: http.ServerResponse, body: unknown) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/**
 * Writes `mb` megabytes of `fill` after `head`, 1 MB at a time as the socket drains, then `tail`; resolves whether
 * all of it was written (false: the gateway dropped the connection first).
 */
function writeHuge(res: http.ServerResponse, head: string, fill: string, mb: number, tail: string): Promise<boolean> {
  return new Promise((resolve) => {
    const block = fill.repeat(Math.ceil(MB / fill.length)).slice(0, MB);
    let n = 0;
    res.on('close', () => resolve(res.writableFinished));
    res.write(head);
    const more = () => {
      while (n < mb && !res.destroyed) {
        n++;
        if (!res.write(block)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end(tail);
    };
    more();
  });
}

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => reply(res, JSON.parse(raw) as { stream?: boolean }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  t = await startAiServer({ env: { OPENAI_API_KEY: 'sk-raw', OPENAI_BASE_URL: base } });
  account = `workspace:${t.workspaceId}`;
  await ledger.ensureAccount(t.db, account, 0);
  await ledger.grant(t.db, account, ledger.usdToNano(5), 'test');
});

afterAll(async () => {
  await t?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

beforeEach(() => {
  reply = (res, body) => {
    if (!body.stream) return json(res, completion({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(sse(chunk('ok')) + sse(chunk('', 'stop')) + 'data: [DONE]\n\n');
  };
});

const balance = async () => (await ledger.getBalance(t.db, account))!.balanceNano;
const usageTotal = async (): Promise<number> => (await t.call('GET', '/api/users/me/usage-limits')).body.usage.currentPeriodCost as number;

interface RequestRow { id: string; status: string; outcome: string | null; deposit_nano: number; cost_nano: number; prompt_tokens: number | null; completion_tokens: number | null; usage_estimated: boolean | null }
async function lastRequest(): Promise<RequestRow> {
  const rows = await t.db.query<RequestRow>(
    `SELECT id, status, outcome, deposit_nano::int8 AS deposit_nano, cost_nano::int8 AS cost_nano, prompt_tokens, completion_tokens, usage_estimated
       FROM ai_requests WHERE account = $1 ORDER BY created_at DESC, id DESC LIMIT 1`, [account]);
  return { ...rows[0], deposit_nano: Number(rows[0].deposit_nano), cost_nano: Number(rows[0].cost_nano) };
}

/** Nothing held, the balance row, the ledger's sum and the API's figure agree, and nothing is below zero. */
async function expectBooksBalanced(): Promise<void> {
  const credits = await t.call('GET', '/api/v1/ai/credits');
  expect(credits.body.reservedUsd).toBe(0);
  const b = await balance();
  expect(b).toBeGreaterThanOrEqual(0);
  const sum = await t.db.query<{ s: number; m: number }>(
    'SELECT COALESCE(sum(amount_nano), 0)::int8 AS s, min(balance_after_nano)::int8 AS m FROM ai_credit_ledger WHERE account = $1', [account]);
  expect(Number(sum[0].s)).toBe(b);
  expect(Number(sum[0].m)).toBeGreaterThanOrEqual(0);
}

describe('an upstream sending too much', () => {
  it('a stream whose first line has no end fails with 502 provider_error, its deposit released; the gateway serves on', async () => {
    let wroteAll: Promise<boolean> | undefined;
    reply = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      wroteAll = writeHuge(res, 'data: ', 'z', 64, '\n\n');
    };
    const before = await balance();
    const r = await chat({ stream: true });
    expect(r.status, r.text.slice(0, 300)).toBe(502);
    expect(r.body.error).toMatchObject({ type: 'server_error', code: 'provider_error' });
    expect(r.body.error.message).toMatch(/line longer than/);
    expect(await wroteAll).toBe(false); // the gateway stopped reading: the connection was dropped
    expect(await lastRequest()).toMatchObject({ status: 'released', cost_nano: 0 });
    expect(await balance()).toBe(before);
    await expectBooksBalanced();

    reply = (res) => json(res, completion({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }));
    expect((await chat({})).status).toBe(200);
  });

  it('a stream that sends a huge line after some text ends with an error event; what was generated is settled', async () => {
    reply = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse(chunk('some text before')));
      void writeHuge(res, 'data: {"choices":[{"index":0,"delta":{"content":"', 'y', 8, '"}}]}\n\n');
    };
    const before = await balance();
    const usageBefore = await usageTotal();
    const r = await chat({ stream: true });
    expect(r.status).toBe(200);
    expect(r.text).toContain('some text before');
    expect(r.text).toMatch(/"code":"provider_error"/);
    expect(r.text.length).toBeLessThan(MB);
    const row = await lastRequest();
    expect(row).toMatchObject({ status: 'settled', outcome: 'failed', usage_estimated: true });
    expect(row.cost_nano).toBeGreaterThan(0);
    expect(row.cost_nano).toBeLessThanOrEqual(row.deposit_nano);
    expect(await balance()).toBe(before - row.cost_nano);
    expect(await usageTotal()).toBeCloseTo(usageBefore + row.cost_nano / 1e9, 9);
    await expectBooksBalanced();
  });

  it('a stream of data lines that never ends its event fails with 502, its deposit released', async () => {
    reply = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      void writeHuge(res, '', 'data: a\n', 16, '\n');
    };
    const before = await balance();
    const r = await chat({ stream: true });
    expect(r.status).toBe(502);
    expect(r.body.error.message).toMatch(/event longer than/);
    expect(await lastRequest()).toMatchObject({ status: 'released' });
    expect(await balance()).toBe(before);
  });

  it('a whole answer larger than 32 MiB is refused with 502, unread past the bound, its deposit released', async () => {
    let wroteAll: Promise<boolean> | undefined;
    reply = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      wroteAll = writeHuge(res, '{"choices":[{"index":0,"message":{"role":"assistant","content":"', 'a', 96, '"},"finish_reason":"stop"}]}');
    };
    const before = await balance();
    const r = await chat({});
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ code: 'provider_error' });
    expect(r.body.error.message).toMatch(/larger than 32 MiB/);
    expect(await wroteAll).toBe(false);
    expect(await lastRequest()).toMatchObject({ status: 'released', cost_nano: 0 });
    expect(await balance()).toBe(before);
    await expectBooksBalanced();
  });

  it('a stream longer than the tokenize limit is estimated at 3 characters a token', async () => {
    const text = 'abcdefghij'.repeat(30_000); // 300,000 characters, in pieces
    reply = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < text.length; i += 10_000) res.write(sse(chunk(text.slice(i, i + 10_000))));
      res.end(sse(chunk('', 'stop')) + 'data: [DONE]\n\n');
    };
    const r = await chat({ stream: true, max_tokens: 200_000 });
    expect(r.status).toBe(200);
    const row = await lastRequest();
    expect(row).toMatchObject({ status: 'settled', usage_estimated: true, completion_tokens: 100_000 });
  });
});

describe('usage an upstream reports', () => {
  const bad: [string, unknown][] = [
    ['fractional', { prompt_tokens: 1.5, completion_tokens: 2.5, total_tokens: 4 }],
    ['beyond int4', { prompt_tokens: 1e15, completion_tokens: 1e15, total_tokens: 2e15 }],
    ['1e300', { prompt_tokens: 1e300, completion_tokens: 1e300, total_tokens: 1e300 }],
    ['negative', { prompt_tokens: -5, completion_tokens: -1000, total_tokens: -1005 }],
    ['not numbers', { prompt_tokens: '10', completion_tokens: null }],
  ];
  for (const [what, usage] of bad) {
    it(`${what}: 200 with estimated whole counts, charged (not lost) within the deposit`, async () => {
      reply = (res) => json(res, completion(usage));
      const before = await balance();
      const usageBefore = await usageTotal();
      const r = await chat({});
      expect(r.status, r.text).toBe(200);
      const u = r.body.usage;
      for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) expect(Number.isSafeInteger(u[k]) && u[k] >= 0, k).toBe(true);
      expect(u.total_tokens).toBe(u.prompt_tokens + u.completion_tokens);
      const row = await lastRequest();
      expect(row).toMatchObject({ id: r.body.id, status: 'settled', usage_estimated: true, prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens });
      expect(row.cost_nano).toBe(costNano(gpt4oMini, u.prompt_tokens, u.completion_tokens));
      expect(row.cost_nano).toBeGreaterThan(0);
      expect(row.cost_nano).toBeLessThanOrEqual(row.deposit_nano);
      expect(r.headers.get('x-credits-used')).toBe(ledger.formatUsd(row.cost_nano));
      expect(await balance()).toBe(before - row.cost_nano);
      expect(await usageTotal()).toBeCloseTo(usageBefore + row.cost_nano / 1e9, 9);
      await expectBooksBalanced();
    });
  }

  it('a stream whose usage chunk is not whole counts: the chunk is not passed on, the usage estimated and charged', async () => {
    reply = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(sse(chunk('four words of text')) + sse(chunk('', 'stop'))
        + sse({ id: 'up', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 1e300, completion_tokens: 1.5, total_tokens: 1 } })
        + 'data: [DONE]\n\n');
    };
    const before = await balance();
    const r = await chat({ stream: true, stream_options: { include_usage: true } });
    expect(r.status).toBe(200);
    expect(r.text).not.toContain('1e+300');
    expect(r.text).toContain('data: [DONE]');
    const row = await lastRequest();
    expect(row).toMatchObject({ status: 'settled', outcome: 'completed', usage_estimated: true });
    expect(row.cost_nano).toBeGreaterThan(0);
    expect(await balance()).toBe(before - row.cost_nano);
    await expectBooksBalanced();
  });

  it('usage far beyond the deposit, within the bound of a count: the deposit charged, the reported cost counted as usage', async () => {
    const usage = { prompt_tokens: 2_000_000_000, completion_tokens: 2_000_000_000, total_tokens: 4_000_000_000 };
    reply = (res) => json(res, completion(usage));
    const before = await balance();
    const usageBefore = await usageTotal();
    const r = await chat({});
    expect(r.status, r.text).toBe(200);
    expect(r.body.usage).toMatchObject(usage);
    const row = await lastRequest();
    expect(row).toMatchObject({ status: 'settled', usage_estimated: false, prompt_tokens: 2_000_000_000 });
    expect(row.cost_nano).toBe(row.deposit_nano);
    expect(await balance()).toBe(before - row.deposit_nano);
    // The usage cap is about what the provider bills for (docs/ai-gateway.md): the reported cost, the overage noted.
    const reported = costNano(gpt4oMini, 2e9, 2e9);
    expect(await usageTotal()).toBeCloseTo(usageBefore + reported / 1e9, 6);
    const ev = await t.db.query<{ amount: string; metadata: { billedUsd: number; overageUsd: number } }>(
      'SELECT amount_usd::text AS amount, metadata FROM usage_events WHERE idempotency_key = $1', [`ai:${r.body.id}`]);
    expect(Number(ev[0].amount)).toBeCloseTo(reported / 1e9, 6);
    expect(ev[0].metadata.billedUsd).toBeCloseTo(row.deposit_nano / 1e9, 9);
    expect(ev[0].metadata.overageUsd).toBeCloseTo((reported - row.deposit_nano) / 1e9, 6);
    await expectBooksBalanced();
  });
});

describe('a completion missing what the format requires', () => {
  it('without finish_reason (and index, message role): 200 with finish_reason null, billed from its usage', async () => {
    reply = (res) => json(res, {
      id: 'up', object: 'chat.completion', created: 1.5, model: 'gpt-4o-mini',
      choices: [{ message: { content: 'hello' } }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
    const before = await balance();
    const r = await chat({});
    expect(r.status, r.text).toBe(200);
    expect(r.body.choices[0]).toMatchObject({ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: null });
    expect(Number.isSafeInteger(r.body.created)).toBe(true);
    const row = await lastRequest();
    expect(row).toMatchObject({ status: 'settled', usage_estimated: false, cost_nano: costNano(gpt4oMini, 10, 5) });
    expect(await balance()).toBe(before - row.cost_nano);
  });

  it('a choice without a message, and malformed tool calls: 200, the deposit settled', async () => {
    reply = (res) => json(res, {
      id: 'up', object: 'chat.completion', created: 1700000000, model: 'gpt-4o-mini',
      choices: [null, { index: 1, message: { role: 'assistant', content: null, tool_calls: [{ function: { name: 'f', arguments: { a: 1 } } }, { id: 'x' }] }, finish_reason: 'tool_calls' }],
    });
    const r = await chat({});
    expect(r.status, r.text).toBe(200);
    expect(r.body.choices[0]).toMatchObject({ index: 0, message: { role: 'assistant', content: null }, finish_reason: null });
    expect(r.body.choices[1].message.tool_calls).toEqual([{ id: 'call_0', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }]);
    expect(await lastRequest()).toMatchObject({ status: 'settled', usage_estimated: true });
    await expectBooksBalanced();
  });
});
