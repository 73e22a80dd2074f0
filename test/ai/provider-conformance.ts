// One suite every AI provider adapter passes (docs/architecture.md, Testing), each against the local server
// speaking its provider's wire format (test/support/fake-providers.ts). What differs between
// providers is only how a request looks on the wire: each adapter under test says where its wire
// format keeps the model, the completion cap, the tools and a tool's result. Answers, streams,
// usage and errors are checked the same way for all of them.
import { beforeEach, describe, expect, it } from 'vitest';
import { providerHttpError } from '../../src/ai/errors.js';
import {
  ProviderError,
  type ChatCompletionChunk,
  type ChatRequest,
  type FunctionTool,
  type Provider,
  type UpstreamCall,
} from '../../src/ai/providers/types.js';
import type { HttpError } from '../../src/http/errors.js';
import type { FakeProvider, FakeProviders, RecordedRequest } from '../support/fake-providers.js';

export interface SentTool { name: string; description?: string; parameters: unknown }

export interface AdapterUnderTest {
  label: string;
  /** Which fake wire format it talks to. */
  fake: FakeProvider;
  /** The adapter, pointed at the fake (or at `baseUrlOverride` for the unreachable case). */
  make(fake: FakeProviders, baseUrlOverride?: string): Provider;
  upstreamModel: string;
  /** Where the wire format keeps the upstream model id. */
  sentModel(req: RecordedRequest): unknown;
  /** Where it keeps the completion cap. */
  sentMaxTokens(req: RecordedRequest): unknown;
  /** The tools as the wire format declares them, in one neutral shape. */
  sentTools(req: RecordedRequest): SentTool[];
  /** A tool's result as sent back to the model: what it refers to (call id, or function name) and its content. */
  sentToolResult(req: RecordedRequest): { ref: string; content: unknown } | undefined;
  /** How the tool result refers to its call: by the call's id, or (Gemini) by the function's name. */
  toolResultRef: 'id' | 'name';
  /** Features this provider lacks, each with the reason the case is skipped. */
  lacks?: { usageOmitted?: string; modelList?: string };
  /** Model ids the provider lists (for providers whose models come from the provider itself). */
  listedModels?: string[];
}

const weather: FunctionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stream assembled: text, tool calls by index, the last finish reason and usage. */
async function assemble(chunks: AsyncIterable<ChatCompletionChunk>) {
  let text = '';
  let finish: string | null = null;
  let usage: ChatCompletionChunk['usage'];
  let role: string | undefined;
  const calls = new Map<number, { id?: string; name?: string; args: string }>();
  for await (const c of chunks) {
    expect(c.object).toBe('chat.completion.chunk');
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      if (ch.delta.role) role = ch.delta.role;
      if (typeof ch.delta.content === 'string') text += ch.delta.content;
      for (const t of ch.delta.tool_calls ?? []) {
        const entry = calls.get(t.index) ?? { args: '' };
        if (t.id) entry.id = t.id;
        if (t.function?.name) entry.name = t.function.name;
        entry.args += t.function?.arguments ?? '';
        calls.set(t.index, entry);
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { text, finish, usage, role, calls: [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v) };
}

/** The gateway error a failure becomes (what the client sees). */
async function gatewayErrorOf(p: Promise<unknown>): Promise<HttpError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err, 'the call should have failed').toBeInstanceOf(ProviderError);
  return providerHttpError(err as ProviderError);
}

export function providerConformance(fakeOf: () => FakeProviders, a: AdapterUnderTest): void {
  describe(`${a.label} provider adapter`, () => {
    let provider: Provider;
    const call = (over: Partial<UpstreamCall> = {}): UpstreamCall => ({
      upstreamModel: a.upstreamModel, maxTokens: 321, clientSetMaxTokens: true, signal: AbortSignal.timeout(10_000), ...over,
    });
    const ask = (over: Partial<ChatRequest> = {}): ChatRequest => ({ model: 'slug', messages: [{ role: 'user', content: 'Weather in Paris?' }], ...over });
    const last = () => {
      const mine = fakeOf().requests.filter((r) => r.provider === a.fake);
      return mine[mine.length - 1];
    };

    beforeEach(() => {
      provider = a.make(fakeOf());
      fakeOf().handler = () => ({ text: 'Sunny, 21 degrees.', usage: { prompt: 123, completion: 45 } });
    });

    describe('complete', () => {
      it('sends the upstream model and the completion cap, answers the text with usage', async () => {
        const c = await provider.complete(ask(), call());
        const req = last();
        expect(a.sentModel(req)).toBe(a.upstreamModel);
        expect(a.sentMaxTokens(req)).toBe(321);
        expect(JSON.stringify(req.body)).toContain('Weather in Paris?');
        expect(c.object).toBe('chat.completion');
        expect(c.choices).toHaveLength(1);
        expect(c.choices[0].message).toMatchObject({ role: 'assistant', content: 'Sunny, 21 degrees.' });
        expect(c.choices[0].finish_reason).toBe('stop');
        expect(c.usage).toMatchObject({ prompt_tokens: 123, completion_tokens: 45, total_tokens: 168 });
      });

      it('reports a cut-off answer as finish_reason length', async () => {
        fakeOf().handler = () => ({ text: 'Sunny, 2', finish: 'length', usage: { prompt: 10, completion: 321 } });
        const c = await provider.complete(ask(), call());
        expect(c.choices[0].finish_reason).toBe('length');
        expect(c.usage).toMatchObject({ completion_tokens: 321 });
      });

      it('reports no usage when the provider reports none (the gateway then estimates it)', async (ctx) => {
        if (a.lacks?.usageOmitted) ctx.skip();
        fakeOf().handler = () => ({ text: 'Sunny.', usage: null });
        const c = await provider.complete(ask(), call());
        expect(c.choices[0].message.content).toBe('Sunny.');
        const u = c.usage;
        expect(u === undefined || u === null || !Number.isFinite(u.completion_tokens) || (u.prompt_tokens === 0 && u.completion_tokens === 0)).toBe(true);
      });
    });

    describe('stream', () => {
      it('deltas assemble to the same text as the whole answer, then the usage', async () => {
        const text = 'Sunny in Paris, twenty-one degrees, light wind from the west.';
        fakeOf().handler = () => ({ text, pieces: 5, usage: { prompt: 77, completion: 13 } });
        const whole = await provider.complete(ask(), call());
        const s = await assemble(provider.stream(ask({ stream: true }), call()));
        expect(s.text).toBe(whole.choices[0].message.content);
        expect(s.text).toBe(text);
        expect(s.role).toBe('assistant');
        expect(s.finish).toBe('stop');
        expect(s.usage).toMatchObject({ prompt_tokens: 77, completion_tokens: 13, total_tokens: 90 });
        expect(a.sentMaxTokens(last())).toBe(321);
      });

      it('a stream the client abandons stops the upstream stream', async () => {
        const fake = fakeOf();
        fake.handler = () => ({ text: 'one two three four five six', pieces: 6, hangAfterPieces: 2, usage: { prompt: 1, completion: 1 } });
        const aborted = fake.abortedStreams;
        const ctrl = new AbortController();
        const iter = provider.stream(ask({ stream: true }), call({ signal: ctrl.signal }))[Symbol.asyncIterator]();
        let got = '';
        while (!got.includes('two')) {
          const n = await iter.next();
          if (n.done) break;
          for (const ch of n.value.choices) got += ch.delta.content ?? '';
        }
        ctrl.abort();
        // As the gateway does: closing the iterator may surface the cancellation, which is expected here.
        await iter.return?.(undefined).catch(() => undefined);
        for (let i = 0; i < 100 && fake.abortedStreams === aborted; i++) await sleep(20);
        expect(fake.abortedStreams).toBeGreaterThan(aborted);
      });
    });

    describe('tool calls', () => {
      it('declares the tools in the provider\'s format and returns its calls as tool_calls', async () => {
        fakeOf().handler = () => ({ toolCalls: [{ id: 'call_7', name: 'get_weather', arguments: { city: 'Paris' } }], usage: { prompt: 40, completion: 12 } });
        const c = await provider.complete(ask({ tools: [weather], tool_choice: 'auto' }), call());
        const tools = a.sentTools(last());
        expect(tools).toHaveLength(1);
        expect(tools[0]).toMatchObject({ name: 'get_weather', description: 'Current weather of a city' });
        expect(tools[0].parameters).toMatchObject({ type: expect.stringMatching(/^object$/i), required: ['city'] });
        const m = c.choices[0].message;
        expect(c.choices[0].finish_reason).toBe('tool_calls');
        expect(m.tool_calls).toHaveLength(1);
        expect(m.tool_calls![0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
        expect(m.tool_calls![0].id).toEqual(expect.any(String));
        expect(JSON.parse(m.tool_calls![0].function.arguments)).toEqual({ city: 'Paris' });
        expect(c.usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 12 });
      });

      it('streams tool calls whose argument pieces assemble to the arguments', async () => {
        fakeOf().handler = () => ({ toolCalls: [{ id: 'call_8', name: 'get_weather', arguments: { city: 'Rome', days: 3 } }], usage: { prompt: 40, completion: 12 } });
        const s = await assemble(provider.stream(ask({ stream: true, tools: [weather] }), call()));
        expect(s.finish).toBe('tool_calls');
        expect(s.calls).toHaveLength(1);
        expect(s.calls[0].name).toBe('get_weather');
        expect(s.calls[0].id).toEqual(expect.any(String));
        expect(JSON.parse(s.calls[0].args)).toEqual({ city: 'Rome', days: 3 });
      });

      it('sends a tool\'s result back referring to its call', async () => {
        await provider.complete(ask({
          tools: [weather],
          messages: [
            { role: 'user', content: 'Weather in Paris?' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
            { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
          ],
        }), call());
        const r = a.sentToolResult(last());
        expect(r).toBeDefined();
        expect(r!.ref).toBe(a.toolResultRef === 'id' ? 'call_1' : 'get_weather');
        const content = typeof r!.content === 'string' ? JSON.parse(r!.content) : r!.content;
        expect(content).toEqual({ temp: 21 });
      });
    });

    it('lists its models', async (ctx) => {
      if (a.lacks?.modelList) ctx.skip();
      expect(provider.listModels).toBeTypeOf('function');
      expect(await provider.listModels!()).toEqual(a.listedModels);
    });

    describe('errors map to the documented gateway errors', () => {
      const cases: [number, number, string, string | null][] = [
        [400, 400, 'invalid_request_error', null],
        [401, 502, 'server_error', 'provider_auth_failed'],
        [403, 502, 'server_error', 'provider_auth_failed'],
        [429, 429, 'rate_limit_error', 'provider_rate_limited'],
        [500, 502, 'server_error', 'provider_error'],
        [503, 502, 'server_error', 'provider_error'],
      ];
      for (const [upstream, status, type, code] of cases) {
        it(`upstream ${upstream} -> ${status} ${code ?? type}`, async () => {
          fakeOf().handler = () => ({ status: upstream, errorMessage: `upstream says ${upstream}` });
          for (const attempt of [provider.complete(ask(), call()), assemble(provider.stream(ask({ stream: true }), call()))]) {
            const e = await gatewayErrorOf(attempt);
            expect(e.status).toBe(status);
            expect(e.extra.type).toBe(type);
            if (code) expect(e.extra.code).toBe(code);
            expect(e.message).toContain(`upstream says ${upstream}`);
          }
        });
      }

      it('a malformed answer -> 502 provider_error', async () => {
        fakeOf().handler = () => ({ malformed: true });
        for (const attempt of [provider.complete(ask(), call()), assemble(provider.stream(ask({ stream: true }), call()))]) {
          const e = await gatewayErrorOf(attempt);
          expect(e.status).toBe(502);
          expect(e.extra).toMatchObject({ type: 'server_error', code: 'provider_error' });
        }
      });

      it('an error event in the middle of a stream -> a provider error after the text so far', async () => {
        fakeOf().handler = () => ({ text: 'one two three four', pieces: 4, failAfterPieces: 2 });
        const chunks: string[] = [];
        const e = await gatewayErrorOf((async () => {
          for await (const c of provider.stream(ask({ stream: true }), call())) for (const ch of c.choices) chunks.push(ch.delta.content ?? '');
        })());
        expect(chunks.join('')).toBe('one two th');
        expect(e.status).toBeGreaterThanOrEqual(500);
        expect(e.extra.type).toBe('server_error');
      });

      it('an unreachable provider -> 502 provider_unavailable', async () => {
        const down = a.make(fakeOf(), 'http://127.0.0.1:9');
        const e = await gatewayErrorOf(down.complete(ask(), call()));
        expect(e.status).toBe(502);
        expect(e.extra).toMatchObject({ type: 'server_error', code: 'provider_unavailable' });
      });

      it('a provider slower than the timeout -> 504 provider_timeout', async () => {
        fakeOf().handler = () => ({ text: 'late', delayMs: 600 });
        const e = await gatewayErrorOf(provider.complete(ask(), call({ signal: AbortSignal.timeout(150) })));
        expect(e.status).toBe(504);
        expect(e.extra).toMatchObject({ type: 'server_error', code: 'provider_timeout' });
      });
    });
  });
}
