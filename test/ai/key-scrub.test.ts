// Some providers echo the credentials they were sent when they refuse a request. The operator's provider
// keys must not travel on from there: not into gateway answers (whole or streamed), not into a workflow
// run's error (the execute answer and the logs API), not into the server's own log. A real `weft serve`
// process at debug level, so every log line it writes can be read.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretScrubber } from '../../src/ai/secret-scrubber.js';
import { ProviderError } from '../../src/ai/providers/types.js';
import { bootstrappedDatabase, request, type TestResponse, type TestServer } from '../support/harness.js';
import { freePort, spawnServer } from '../support/cli.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { deploy, start } from '../support/workflows.js';

// Keys of each kind: one shaped like no known secret (only the configured-key scrubbing can catch it),
// the others in their providers' real shapes.
const KEYS = {
  OPENAI_API_KEY: 'q7Vx2LmP9tRz4WkC8nB1hDyE6gJ3fS5a',
  ANTHROPIC_API_KEY: 'sk-ant-api03-Xq4Tn8Wv2Lp6Zr9Kc3Mb7Hd1Yf5Gs0Je',
  GEMINI_API_KEY: 'AIzaSyB3kQ9wE7rT1yU5iO2pA8sD4fG6hJ0lZxC',
};

/** Every 8-character piece of every key found in `text` (a truncated key leaks too). */
function leaks(text: string): string[] {
  const found = new Set<string>();
  for (const key of Object.values(KEYS)) {
    for (let i = 0; i + 8 <= key.length; i++) if (text.includes(key.slice(i, i + 8))) found.add(key);
  }
  return [...found];
}

/** What a careless upstream answers: the credential it got, whole, after `Bearer`, and truncated. */
function echo(headers: Record<string, string | string[] | undefined>): string {
  const sent = String(headers.authorization ?? headers['x-api-key'] ?? headers['x-goog-api-key'] ?? '');
  const bare = sent.replace(/^Bearer /, '');
  return `Incorrect API key provided: ${sent}. You sent ${bare} (${bare.slice(0, 12)}****); headers: {"x-api-key":"${bare}"} url: /v1?key=${bare}`;
}

describe('provider keys echoed by an upstream', () => {
  let fake: FakeProviders;
  let child: ChildProcess | undefined;
  let output: () => string = () => '';
  let t: TestServer;

  beforeAll(async () => {
    fake = await startFakeProviders();
    const boot = await bootstrappedDatabase();
    const server = await spawnServer({
      ...boot.env, ...fake.env, ...KEYS, LOG_LEVEL: 'debug', WEFT_AI_STARTING_CREDITS_USD: '5',
    }, await freePort());
    child = server.child;
    output = server.output;
    const call = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) =>
      request(server.url + p, method, body, { 'x-api-key': boot.apiKey, ...headers });
    t = { call, workspaceId: boot.workspaceId } as unknown as TestServer;
  }, 90_000);
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await fake?.close();
  });

  const chat = (model: string, extra: Record<string, unknown> = {}) =>
    t.call('POST', '/api/v1/ai/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 16, ...extra });

  const expectClean = (r: TestResponse, echoed = /Incorrect API key provided/) => {
    expect(r.text).toMatch(echoed); // the upstream's message did come through ...
    expect(leaks(r.text), r.text).toEqual([]); // ... without the key
  };

  it('a refused request: the gateway answer (whole and streamed) names no key, for each provider', async () => {
    fake.handler = (req) => ({ status: 401, errorMessage: echo(req.headers) });
    for (const model of ['gpt-4o', 'claude-3-5-haiku-latest', 'gemini-2.0-flash']) {
      const plain = await chat(model);
      expect(plain.status, plain.text).toBe(502);
      expectClean(plain);
      const streamed = await chat(model, { stream: true });
      expect(streamed.status, streamed.text).toBe(502);
      expectClean(streamed);
    }
    fake.handler = (req) => ({ status: 500, errorMessage: echo(req.headers) });
    const failed = await chat('gpt-4o');
    expect(failed.status).toBe(502);
    expectClean(failed);
  });

  it('an error event in the middle of a stream names no key', async () => {
    fake.handler = (req) => ({ text: 'one two three four', pieces: 4, failAfterPieces: 2, streamErrorMessage: echo(req.headers) });
    for (const model of ['gpt-4o', 'claude-3-5-haiku-latest', 'gemini-2.0-flash']) {
      const r = await chat(model, { stream: true });
      expect(r.status).toBe(200);
      expect(r.text).toContain('"error"');
      expectClean(r);
    }
  });

  it("an agent block's run error names no key: not in the execute answer, not in the logs API", async () => {
    fake.handler = (req) => ({ status: 401, errorMessage: echo(req.headers) });
    const id = await deploy(t, 'echoing-upstream', {
      blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'gpt-4o', userPrompt: 'hi' } }],
      edges: [{ from: 'start', to: 'agent' }],
    });
    const run = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(run.body?.success, run.text).toBe(false);
    expectClean(run);
    const executionId = run.headers.get('x-execution-id') ?? run.body.executionId;
    const list = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}`);
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expectClean(list);
    const one = await t.call('GET', `/api/v1/logs/${executionId}`);
    expect(one.status, one.text).toBe(200);
    expect(one.body.data.trace.find((s: { blockId: string }) => s.blockId === 'agent')?.error).toMatch(/Incorrect API key provided/);
    expectClean(one);
  });

  it("the server's log holds no key", () => {
    // It did log the failures (at debug level, every request), so the check reads real lines.
    expect(output()).toMatch(/Incorrect API key provided/);
    expect(leaks(output())).toEqual([]);
  });
});

describe('the secret scrubber', () => {
  const scrubber = new SecretScrubber([KEYS.OPENAI_API_KEY, 'shortk', 'ab', undefined]);

  it('removes a configured key, whole or any piece of 8 characters or more, and secret-shaped text', () => {
    const text = scrubber.text(`a ${KEYS.OPENAI_API_KEY} b ${KEYS.OPENAI_API_KEY.slice(3, 14)} c ${KEYS.OPENAI_API_KEY.slice(0, 7)} d shortk e ab`);
    expect(text).toBe(`a [redacted] b [redacted] c ${KEYS.OPENAI_API_KEY.slice(0, 7)} d [redacted] e ab`);
    expect(scrubber.text('Authorization: Bearer abcdefgh12345 and Authorization: Basic dXNlcjpwYXNzd29yZA== x-goog-api-key: "zzzzzzzzz"'))
      .toBe('Authorization: Bearer [redacted] and Authorization: [redacted] x-goog-api-key: "[redacted]"');
    expect(scrubber.text('keys sk-proj-abcdef123456 sk-ant-api03-xyz AIzaSyA1234567890abcdefghijklmno https://x/y?alt=sse&key=secret1&b=2'))
      .toBe('keys [redacted] [redacted] [redacted] https://x/y?alt=sse&[redacted]&b=2'.replace('&[redacted]', '&key=[redacted]'));
    expect(scrubber.text('The model is overloaded. Try again.')).toBe('The model is overloaded. Try again.');
  });

  it('a provider error comes back as a new error whose message and stack are clean', () => {
    const err = new ProviderError('openai', 401, `bad key ${KEYS.OPENAI_API_KEY}`, 'invalid_request_error', KEYS.OPENAI_API_KEY);
    const clean = scrubber.error(err) as ProviderError;
    expect(clean).toBeInstanceOf(ProviderError);
    expect([clean.message, clean.stack, clean.upstreamCode, clean.status, clean.upstreamType]).toEqual([
      'bad key [redacted]', expect.not.stringContaining(KEYS.OPENAI_API_KEY), '[redacted]', 401, 'invalid_request_error',
    ]);
  });
});
