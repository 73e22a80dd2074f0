import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request, startAiServer, type AiTestServer } from './ai-server.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import * as ledger from '../../src/ai/credit-ledger.js';

let t: AiTestServer;
let fake: FakeProviders;
let account: string;
const extraModels = JSON.stringify([
  { id: 'plain-model', provider: 'openai-compatible', upstreamId: 'llama3.2:1b', inputPerMillion: 1, outputPerMillion: 2, tools: false, jsonSchema: false, streaming: false },
]);

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startAiServer({ env: { ...fake.env, WEFT_AI_MODELS: extraModels } });
  account = `workspace:${t.workspaceId}`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.handler = (req) => ({ text: `Hello from ${req.provider}`, usage: { prompt: 100, completion: 50 } });
});

const chat = (body: unknown, headers: Record<string, string> = {}) => t.call('POST', '/api/v1/ai/chat/completions', body, headers);
const balanceNano = async () => (await ledger.getBalance(t.db, account))?.balanceNano ?? 0;
/** Sets the account's balance to exactly `usd` through a grant. */
async function setBalance(usd: number) {
  await ledger.ensureAccount(t.db, account, 0);
  const diff = ledger.usdToNano(usd) - (await balanceNano());
  if (diff !== 0) await ledger.grant(t.db, account, diff, 'test');
}
const client = () => new OpenAI({ baseURL: `${t.url}/api/v1/ai`, apiKey: t.apiKey, maxRetries: 0 });
const hi = [{ role: 'user' as const, content: 'hi' }];

describe('the official openai client against Weft', () => {
  beforeAll(async () => setBalance(10));

  it('creates a non-streaming completion', async () => {
    const c = await client().chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'system', content: 'Be brief.' }, ...hi] });
    expect(c.object).toBe('chat.completion');
    expect(c.id).toMatch(/^chatcmpl-/);
    expect(c.model).toBe('gpt-4o');
    expect(c.choices[0].message).toMatchObject({ role: 'assistant', content: 'Hello from openai' });
    expect(c.choices[0].finish_reason).toBe('stop');
    expect(c.usage).toMatchObject({ prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 });
    const sent = fake.requests.at(-1)!;
    expect(sent.headers.authorization).toBe('Bearer sk-fake-openai');
    expect(sent.body.model).toBe('gpt-4o');
    expect(sent.body.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }]);
  });

  it('streams a completion with usage', async () => {
    fake.handler = () => ({ text: 'one two three four', usage: { prompt: 11, completion: 4 }, pieces: 4 });
    const stream = await client().chat.completions.create({ model: 'gpt-4o-mini', messages: hi, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage;
    const ids = new Set<string>();
    let finish;
    for await (const chunk of stream) {
      ids.add(chunk.id);
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.model).toBe('gpt-4o-mini');
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('one two three four');
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 4 });
    expect(ids.size).toBe(1);
    expect(fake.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
  });

  it('mints completion ids in the order the requests came, streaming or not, and bills them under those ids', async () => {
    // Time first (docs/architecture.md, "Run ids"): the request rows and usage events they key are appended.
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      if (i % 2 === 0) ids.push((await client().chat.completions.create({ model: 'gpt-4o', messages: hi })).id);
      else for await (const chunk of await client().chat.completions.create({ model: 'gpt-4o', messages: hi, stream: true })) ids.push(chunk.id);
      await new Promise((r) => setTimeout(r, 2)); // a later millisecond: within one the order is random
    }
    const distinct = [...new Set(ids)];
    expect(distinct).toHaveLength(4);
    for (const id of distinct) expect(id).toMatch(/^chatcmpl-[0-9a-f]{12}[A-Za-z0-9_-]{16}$/);
    expect([...distinct].sort()).toEqual(distinct);
    const settled = (await t.call('GET', '/api/v1/ai/credits/ledger?limit=50')).body.data
      .filter((e: { kind: string }) => e.kind === 'settle').map((e: { requestId: string }) => e.requestId);
    expect(settled.slice(0, 4).reverse()).toEqual(distinct);
  });

  it('does not send a usage chunk unless asked', async () => {
    const r = await fetch(`${t.url}/api/v1/ai/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${t.apiKey}` },
      body: JSON.stringify({ model: 'gpt-4o', messages: hi, stream: true }),
    });
    const body = await r.text();
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = body.split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    for (const e of events.slice(0, -1)) {
      expect(e.startsWith('data: ')).toBe(true);
      const chunk = JSON.parse(e.slice(6));
      expect(chunk.choices.length).toBeGreaterThan(0);
      expect(chunk.usage).toBeUndefined();
    }
  });

  it('passes tools through and returns tool calls, streaming and not', async () => {
    fake.handler = () => ({ toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: { city: 'Paris' } }], usage: { prompt: 40, completion: 12 } });
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const c = await client().chat.completions.create({ model: 'gpt-4.1', messages: hi, tools, tool_choice: 'auto' });
    expect(c.choices[0].finish_reason).toBe('tool_calls');
    const call = c.choices[0].message.tool_calls![0];
    expect(call).toMatchObject({ id: 'call_abc', type: 'function' });
    expect(JSON.parse((call as { function: { arguments: string } }).function.arguments)).toEqual({ city: 'Paris' });
    expect(fake.requests.at(-1)!.body.tools).toEqual(tools);
    expect(fake.requests.at(-1)!.body.tool_choice).toBe('auto');

    const stream = client().chat.completions.stream({ model: 'gpt-4.1', messages: hi, tools });
    const final = await stream.finalChatCompletion();
    const streamed = final.choices[0].message.tool_calls![0] as { id: string; function: { name: string; arguments: string } };
    expect(streamed.function.name).toBe('get_weather');
    expect(JSON.parse(streamed.function.arguments)).toEqual({ city: 'Paris' });

    // The tool result goes back as a tool message.
    fake.handler = () => ({ text: 'It is sunny in Paris.' });
    const next = await client().chat.completions.create({
      model: 'gpt-4.1', tools,
      messages: [...hi, c.choices[0].message, { role: 'tool', tool_call_id: 'call_abc', content: '{"sky":"clear"}' }],
    });
    expect(next.choices[0].message.content).toBe('It is sunny in Paris.');
    expect(fake.requests.at(-1)!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_abc', content: '{"sky":"clear"}' });
  });

  it('lists models in the OpenAI list shape, only of configured providers', async () => {
    const list = await client().models.list();
    const ids = list.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['gpt-4o', 'claude-sonnet-4-5', 'gemini-2.5-flash', 'llama3.2:1b', 'qwen2.5:0.5b', 'plain-model']));
    for (const m of list.data) expect(m).toMatchObject({ object: 'model', created: expect.any(Number), owned_by: expect.any(String) });
    const raw = await t.call('GET', '/api/v1/ai/models');
    expect(raw.body.object).toBe('list');
    expect(raw.body.data.find((m: { id: string }) => m.id === 'claude-sonnet-4-5').owned_by).toBe('anthropic');
  });

  it('maps errors to the client error classes', async () => {
    await expect(client().chat.completions.create({ model: 'no-such-model', messages: hi })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    const bad = new OpenAI({ baseURL: `${t.url}/api/v1/ai`, apiKey: 'sk-weft-wrongwrongwrongwrongwrongwrong00', maxRetries: 0 });
    await expect(bad.chat.completions.create({ model: 'gpt-4o', messages: hi })).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  });
});

describe('models without every feature', () => {
  beforeAll(async () => setBalance(10));

  it('refuses tools, json_schema and streaming with a 400 that says so', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    const a = await chat({ model: 'plain-model', messages: hi, tools });
    expect(a.status).toBe(400);
    expect(a.body.error).toMatchObject({ type: 'invalid_request_error', param: 'tools' });
    expect(a.body.error.message).toMatch(/does not support tools/);
    const b = await chat({ model: 'plain-model', messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } });
    expect(b.status).toBe(400);
    expect(b.body.error.message).toMatch(/does not support structured output/);
    const c = await chat({ model: 'plain-model', messages: hi, stream: true });
    expect(c.status).toBe(400);
    expect(c.body.error.message).toMatch(/does not support streaming/);
    // Without those features the model works, routed to the compatible server under its upstream id.
    const ok = await chat({ model: 'plain-model', messages: hi });
    expect(ok.status).toBe(200);
    expect(ok.body.model).toBe('plain-model');
    expect(fake.requests.at(-1)!.body.model).toBe('llama3.2:1b');
    expect(fake.requests.at(-1)!.body.max_tokens).toBe(4096);
  });
});

describe('the error table', () => {
  beforeAll(async () => setBalance(10));

  it('401 invalid_api_key without a key or with a wrong one, either header', async () => {
    const none = await request(`${t.url}/api/v1/ai/chat/completions`, 'POST', { model: 'gpt-4o', messages: hi });
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', code: 'invalid_api_key' } });
    const wrongKeys: Record<string, string>[] = [{ authorization: 'Bearer sk-weft-nopenopenopenopenopenopenopenope' }, { 'x-api-key': 'sk-weft-nopenopenopenopenopenopenopenope' }];
    for (const headers of wrongKeys) {
      const r = await request(`${t.url}/api/v1/ai/chat/completions`, 'POST', { model: 'gpt-4o', messages: hi }, headers);
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
    }
    const models = await request(`${t.url}/api/v1/ai/models`, 'GET');
    expect(models.status).toBe(401);
    expect(models.body.error.code).toBe('invalid_api_key');
  });

  it('accepts the key as a Bearer token and as X-API-Key', async () => {
    const a = await request(`${t.url}/api/v1/ai/models`, 'GET', undefined, { authorization: `Bearer ${t.apiKey}` });
    const b = await request(`${t.url}/api/v1/ai/models`, 'GET', undefined, { 'x-api-key': t.apiKey });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
  });

  it('400 for malformed JSON and schema violations, nothing reserved', async () => {
    const before = await balanceNano();
    const cases: [unknown, RegExp][] = [
      ['{"model": ', /valid JSON/],
      ['[1,2]', /./],
      [{ messages: hi }, /model/],
      [{ model: 'gpt-4o' }, /messages/],
      [{ model: 'gpt-4o', messages: [] }, /messages/],
      [{ model: 'gpt-4o', messages: hi, temperature: 2.5 }, /temperature/],
      [{ model: 'gpt-4o', messages: hi, temperature: -0.1 }, /temperature/],
      [{ model: 'gpt-4o', messages: hi, max_tokens: 0 }, /max_tokens/],
      [{ model: 'gpt-4o', messages: hi, max_tokens: 1.5 }, /max_tokens/],
      [{ model: 'gpt-4o', messages: hi, top_p: 1.5 }, /top_p/],
      [{ model: 'gpt-4o', messages: hi, stream: 'yes' }, /stream/],
      [{ model: 'gpt-4o', messages: hi, stop: 5 }, /stop/],
      [{ model: 'gpt-4o', messages: hi, stop: ['a', 'b', 'c', 'd', 'e'] }, /stop/],
      [{ model: 'gpt-4o', messages: hi, tool_choice: 'sometimes' }, /tool_choice/],
      [{ model: 'gpt-4o', messages: hi, tools: [{ type: 'function', function: { name: 'bad name!' } }] }, /tools/],
      [{ model: 'gpt-4o', messages: hi, response_format: { type: 'yaml' } }, /response_format/],
      [{ model: 'gpt-4o', messages: [{ role: 'wizard', content: 'x' }] }, /role/],
      [{ model: 'gpt-4o', messages: [{ role: 'user' }] }, /content/],
      [{ model: 'gpt-4o', messages: [{ role: 'tool', content: 'x' }] }, /tool_call_id/],
      [{ model: 42, messages: hi }, /model/],
    ];
    for (const [body, message] of cases) {
      const r = await chat(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.type).toBe('invalid_request_error');
      expect(r.body.error.message).toMatch(message);
      expect(r.body.error).toHaveProperty('code');
    }
    expect(await balanceNano()).toBe(before);
  });

  it('402 insufficient_quota / insufficient_credits when the balance is too low', async () => {
    await setBalance(0.00001);
    const r = await chat({ model: 'gpt-4o', messages: hi, max_tokens: 1000 });
    expect(r.status).toBe(402);
    expect(r.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_credits' });
    expect(r.body.error.message).toMatch(/Insufficient credits/);
    await expect(client().chat.completions.create({ model: 'gpt-4o', messages: hi })).rejects.toMatchObject({ status: 402, code: 'insufficient_credits', type: 'insufficient_quota' });
    const s = await chat({ model: 'gpt-4o', messages: hi, stream: true });
    expect(s.status).toBe(402);
    await setBalance(10);
  });

  it('404 model_not_found for an unknown model and for a model whose provider is not configured', async () => {
    const r = await chat({ model: 'gpt-99-ultra', messages: hi });
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found', param: 'model' });
    // The message names the configured models and how to serve the one asked for.
    expect(r.body.error.message).toMatch(/^The model 'gpt-99-ultra' does not exist or is not available on this gateway\. To serve it, set OPENAI_COMPATIBLE_BASE_URL/);
    expect(r.body.error.message).toMatch(/Configured models: gpt-4o, gpt-4o-mini, .* and \d+ more \(GET \/api\/v1\/ai\/models lists them all\)\.$/);
    const other = await startAiServer({ env: { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: fake.env.OPENAI_BASE_URL } });
    try {
      const c = await other.call('POST', '/api/v1/ai/chat/completions', { model: 'claude-sonnet-4-5', messages: hi });
      expect(c.status).toBe(404);
      expect(c.body.error.code).toBe('model_not_found');
      expect(c.body.error.message).toContain('It is an Anthropic model, whose provider is not configured: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a proxy).');
      expect(c.body.error.message).toContain('Configured models: gpt-4o, gpt-4o-mini, gpt-4.1, gpt-4.1-mini, gpt-4.1-nano, o3, o4-mini, gpt-5, gpt-5-mini, gpt-5-nano.');
      expect(c.body.error.message).not.toMatch(/claude-opus/);
      const list = await other.call('GET', '/api/v1/ai/models');
      expect(list.body.data.every((m: { owned_by: string }) => m.owned_by === 'openai')).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('500 server_error with the envelope on an internal failure', async () => {
    const db = t.db;
    await db.exec('ALTER TABLE ai_requests RENAME TO ai_requests_hidden');
    try {
      const r = await chat({ model: 'gpt-4o', messages: hi });
      expect(r.status).toBe(500);
      expect(r.body.error).toMatchObject({ type: 'server_error', code: null });
      expect(typeof r.body.error.message).toBe('string');
    } finally {
      await db.exec('ALTER TABLE ai_requests_hidden RENAME TO ai_requests');
    }
  });

  it('502 on a provider failure, the provider status for its rate limits and refusals; the deposit is released', async () => {
    const before = await balanceNano();
    fake.handler = () => ({ status: 500, errorMessage: 'upstream exploded' });
    const r = await chat({ model: 'gpt-4o', messages: hi });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ type: 'server_error', code: 'provider_error' });
    expect(r.body.error.message).toMatch(/upstream exploded/);

    fake.handler = () => ({ status: 429, errorMessage: 'slow down' });
    const limited = await chat({ model: 'claude-sonnet-4-5', messages: hi });
    expect(limited.status).toBe(429);
    expect(limited.body.error.type).toBe('rate_limit_error');

    fake.handler = () => ({ status: 400, errorMessage: 'bad schema in tool' });
    const refused = await chat({ model: 'gemini-2.5-flash', messages: hi });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/bad schema in tool/);

    fake.handler = () => ({ status: 401, errorMessage: 'invalid x-api-key' });
    const creds = await chat({ model: 'claude-sonnet-4-5', messages: hi });
    expect(creds.status).toBe(502);
    expect(creds.body.error.code).toBe('provider_auth_failed');

    fake.handler = () => ({ status: 503, errorMessage: 'overloaded' });
    const s = await chat({ model: 'gpt-4o', messages: hi, stream: true });
    expect(s.status).toBe(502);
    expect(s.body.error.type).toBe('server_error');

    expect(await balanceNano()).toBe(before);
    const open = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM ai_requests WHERE status = 'reserved'");
    expect(open[0].n).toBe(0);
    const bal = await ledger.getBalance(t.db, account);
    expect(bal!.reservedNano).toBe(0);
  });

  it('502 when the provider cannot be reached', async () => {
    const down = await startAiServer({ env: { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', WEFT_AI_STARTING_CREDITS_USD: '1' } });
    try {
      const r = await down.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: hi });
      expect(r.status).toBe(502);
      expect(r.body.error).toMatchObject({ type: 'server_error', code: 'provider_unavailable' });
      const credits = await down.call('GET', '/api/v1/ai/credits');
      expect(credits.body).toMatchObject({ balanceUsd: 1, reservedUsd: 0 });
    } finally {
      await down.close();
    }
  });

  it('answers an unknown AI route with the AI envelope', async () => {
    const r = await t.call('GET', '/api/v1/ai/nope');
    expect(r.status).toBe(404);
    expect(r.body.error.type).toBe('invalid_request_error');
  });
});

describe('billing arithmetic', () => {
  beforeAll(async () => setBalance(10));

  const cases = [
    { model: 'gpt-4o', prompt: 1000, completion: 500, used: '0.007500' },             // 1000*2.5/1e6 + 500*10/1e6
    { model: 'claude-sonnet-4-5', prompt: 1234, completion: 567, used: '0.012207' },  // 0.003702 + 0.008505
    { model: 'gemini-2.5-flash', prompt: 1000, completion: 1000, used: '0.002800' },  // 0.0003 + 0.0025
    { model: 'gpt-4o-mini', prompt: 7, completion: 3, used: '0.000003' },             // 0.00000105 + 0.0000018 = 0.00000285
    { model: 'llama3.2:1b', prompt: 5000, completion: 5000, used: '0.000000' },       // compatible server: free unless priced
  ];
  for (const c of cases) {
    it(`charges ${c.model} exactly from the usage and the catalog prices`, async () => {
      fake.handler = () => ({ text: 'ok', usage: { prompt: c.prompt, completion: c.completion } });
      const before = await balanceNano();
      const r = await chat({ model: c.model, messages: hi, max_tokens: 2000 });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-credits-used')).toBe(c.used);
      expect(r.body.usage).toMatchObject({ prompt_tokens: c.prompt, completion_tokens: c.completion });
      const after = await balanceNano();
      expect(r.headers.get('x-credits-remaining')).toBe(ledger.formatUsd(after));
      const entries = await ledger.listLedger(t.db, account, 2);
      expect(entries[0].kind).toBe('settle');
      expect(entries[0].request_id).toBe(r.body.id);
      expect(before - after).toBe(entries[0].cost_nano);
      expect(ledger.formatUsd(entries[0].cost_nano!)).toBe(c.used);
      const ev = await t.db.query<{ amount: number; source: string }>(
        'SELECT amount_usd::float8 AS amount, source FROM usage_events WHERE idempotency_key = $1', [`ai:${r.body.id}`],
      );
      expect(ev).toHaveLength(1);
      expect(ev[0].source).toBe('ai');
      expect(ev[0].amount).toBeCloseTo(entries[0].cost_nano! / 1e9, 12);
    });
  }

  for (const model of ['gpt-4o', 'gemini-2.5-flash']) {
    for (const stream of [false, true]) {
      it(`estimates the cost from the text when ${model} reports no usage${stream ? ' (streaming)' : ''}`, async () => {
        fake.handler = () => ({ text: 'word '.repeat(40).trim(), usage: null });
        const before = await balanceNano();
        const r = await chat({ model, messages: [{ role: 'user', content: 'Say something.' }], max_tokens: 500, stream });
        expect(r.status).toBe(200);
        const row = await t.db.query<{ usage_estimated: boolean; completion_tokens: number; prompt_tokens: number; cost_nano: number }>(
          'SELECT usage_estimated, completion_tokens, prompt_tokens, cost_nano::int8 AS cost_nano FROM ai_requests WHERE account = $1 ORDER BY created_at DESC LIMIT 1', [account]);
        expect(row[0]).toMatchObject({ usage_estimated: true, completion_tokens: 40 });
        expect(row[0].prompt_tokens).toBeGreaterThan(3);
        expect(Number(row[0].cost_nano)).toBeGreaterThan(0);
        expect(before - (await balanceNano())).toBe(Number(row[0].cost_nano));
        if (!stream) expect(r.body.usage.completion_tokens).toBe(40);
      });
    }
  }

  it('reserves the deposit from max_tokens (or the default cap) and sends the cap upstream', async () => {
    // The upstream holds its answer until the deposit has been read: the request is in flight meanwhile.
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    let arrived!: () => void;
    const upstreamReached = new Promise<void>((r) => (arrived = r));
    fake.handler = () => {
      arrived();
      return { text: 'ok', hold, usage: { prompt: 10, completion: 10 } };
    };
    const before = await balanceNano();
    const pending = chat({ model: 'gpt-4o', messages: hi, max_tokens: 1000 });
    await upstreamReached;
    // The gateway's view: on the embedded database the deposit is held in memory, not written.
    const during = await t.gateway.balance(account);
    // 1000 completion tokens at $10/M = $0.01, plus the prompt estimate.
    expect(during!.reservedNano).toBeGreaterThanOrEqual(10_000_000);
    expect(during!.reservedNano).toBeLessThan(10_100_000);
    expect(before - during!.balanceNano).toBe(during!.reservedNano);
    release();
    const r = await pending;
    expect(r.status).toBe(200);
    expect(fake.requests.at(-1)!.body.max_completion_tokens).toBe(1000);
    expect(fake.requests.at(-1)!.body.max_tokens).toBeUndefined();
    expect((await t.gateway.balance(account))!.reservedNano).toBe(0);
    fake.handler = () => ({ text: 'ok' });
    await chat({ model: 'gpt-4o', messages: hi });
    expect(fake.requests.at(-1)!.body.max_completion_tokens).toBe(4096);
  });

  it('bills a personal key to its user, not the workspace', async () => {
    const personal = { secret: await t.createKey('personal') };
    const userAccount = `user:${t.userId}`;
    await ledger.grant(t.db, userAccount, ledger.usdToNano(1), 'test');
    const wsBefore = await balanceNano();
    fake.handler = () => ({ text: 'ok', usage: { prompt: 1000, completion: 500 } });
    const r = await request(`${t.url}/api/v1/ai/chat/completions`, 'POST', { model: 'gpt-4o', messages: hi, max_tokens: 1000 }, { authorization: `Bearer ${personal.secret}` });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-credits-used')).toBe('0.007500');
    expect(r.headers.get('x-credits-remaining')).toBe('0.992500');
    expect(await balanceNano()).toBe(wsBefore);
    const credits = await request(`${t.url}/api/v1/ai/credits`, 'GET', undefined, { 'x-api-key': personal.secret });
    expect(credits.body).toMatchObject({ account: userAccount, balanceUsd: 0.9925, reservedUsd: 0 });
  });
});

describe('credits over the API', () => {
  it('shows the balance and pages the ledger with a cursor', async () => {
    await setBalance(3);
    fake.handler = () => ({ text: 'ok', usage: { prompt: 10, completion: 10 } });
    for (let i = 0; i < 3; i++) expect((await chat({ model: 'gpt-4o-mini', messages: hi, max_tokens: 100 })).status).toBe(200);
    const credits = await t.call('GET', '/api/v1/ai/credits');
    expect(credits.status).toBe(200);
    expect(credits.body.account).toBe(account);
    expect(credits.body.balanceUsd).toBe(ledger.roundUsd(await balanceNano()));
    expect(credits.body.reservedUsd).toBe(0);

    const seen: any[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await t.call('GET', `/api/v1/ai/credits/ledger?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(4);
      seen.push(...r.body.data);
      cursor = r.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThan(2);
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    const ids = seen.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    // The ledger adds up to the balance.
    const total = await t.db.query<{ s: number }>('SELECT sum(amount_nano)::int8 AS s FROM ai_credit_ledger WHERE account = $1', [account]);
    expect(Number(total[0].s)).toBe(await balanceNano());
    expect(seen[0]).toMatchObject({ kind: 'settle', model: 'gpt-4o-mini', requestId: expect.stringMatching(/^chatcmpl-/), costUsd: expect.any(Number) });
    expect(seen[1].kind).toBe('reserve');

    for (const q of ['cursor=garbage', 'limit=0', 'limit=201', 'limit=abc', `cursor=${Buffer.from(JSON.stringify({ t: new Date().toISOString(), id: 'x' })).toString('base64url')}`]) {
      const bad = await t.call('GET', `/api/v1/ai/credits/ledger?${q}`);
      expect(bad.status, q).toBe(400);
      expect(bad.body.error.type).toBe('invalid_request_error');
    }
  });

  it('publishes the AI routes in the OpenAPI document under the ai tag', async () => {
    const doc = await request(`${t.url}/api/openapi.json`, 'GET');
    for (const p of ['/api/v1/ai/chat/completions', '/api/v1/ai/models', '/api/v1/ai/credits', '/api/v1/ai/credits/ledger']) {
      const op = doc.body.paths[p].post ?? doc.body.paths[p].get;
      expect(op.tags).toEqual(['ai']);
    }
  });
});
