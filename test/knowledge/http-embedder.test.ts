import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { EmbeddingError, normalize } from '../../src/knowledge/embedder.js';
import { createEmbedders } from '../../src/knowledge/embedders.js';
import { HttpEmbedder } from '../../src/knowledge/http-embedder.js';
import { LOCAL_EMBEDDING_MODEL } from '../../src/knowledge/local-embedder.js';

interface Seen {
  url: string;
  authorization?: string;
  body: { model: string; input: string[] };
}

type Reply = (req: Seen) => { status?: number; body: unknown; delayMs?: number };

/** Deterministic fake vector: direction depends on the number in the text ("t-17" -> [1, 17, 0]). */
function fakeVector(text: string): number[] {
  return [1, Number(/\d+/.exec(text)?.[0] ?? 0), 0];
}

const wellFormed: Reply = ({ body }) => ({
  body: {
    object: 'list',
    model: body.model,
    data: body.input.map((t, index) => ({ object: 'embedding', index, embedding: fakeVector(t) })),
    usage: { prompt_tokens: body.input.length * 2, total_tokens: body.input.length * 2 },
  },
});

describe('HttpEmbedder (OpenAI-compatible wire format)', () => {
  let server: http.Server;
  let baseUrl: string;
  let seen: Seen[] = [];
  let reply: Reply = wellFormed;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const entry: Seen = { url: req.url ?? '', authorization: req.headers.authorization, body: JSON.parse(raw) };
        seen.push(entry);
        const { status = 200, body, delayMs = 0 } = reply(entry);
        setTimeout(() => {
          if (res.destroyed) return;
          res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
          res.end(typeof body === 'string' ? body : JSON.stringify(body));
        }, delayMs);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    seen = [];
    reply = wellFormed;
  });

  const make = (opts: Partial<ConstructorParameters<typeof HttpEmbedder>[0]> = {}) =>
    new HttpEmbedder({ baseUrl, apiKey: 'sk-test-secret', model: 'text-embedding-test', ...opts });

  test('batches requests, keeps input order, sums usage and sends the key', async () => {
    const texts = Array.from({ length: 250 }, (_, i) => `t-${i}`);
    const result = await make({ batchSize: 100 }).embed(texts);

    expect(seen.map((s) => s.body.input.length)).toEqual([100, 100, 50]);
    expect(seen.every((s) => s.url === '/v1/embeddings' && s.body.model === 'text-embedding-test')).toBe(true);
    expect(seen[0].authorization).toBe('Bearer sk-test-secret');
    expect(result.tokens).toBe(500);
    expect(result.vectors).toHaveLength(250);
    result.vectors.forEach((v, i) => expect(v).toEqual(normalize(fakeVector(texts[i]))));
  });

  test('orders by index when the server answers shuffled; falls back to prompt_tokens', async () => {
    reply = (req) => {
      const { body } = wellFormed(req) as { body: { data: unknown[] } };
      return { body: { data: [...body.data].reverse(), usage: { prompt_tokens: 7 } } };
    };
    const texts = ['t-1', 't-2', 't-3', 't-4'];
    const result = await make().embed(texts);
    result.vectors.forEach((v, i) => expect(v).toEqual(normalize(fakeVector(texts[i]))));
    expect(result.tokens).toBe(7);
  });

  test('no authorization header without a key; empty input makes no request', async () => {
    const embedder = make({ apiKey: undefined });
    await embedder.embed(['t-1']);
    expect(seen[0].authorization).toBeUndefined();
    expect(await embedder.embed([])).toEqual({ vectors: [], tokens: 0 });
    expect(seen).toHaveLength(1);
  });

  test('401 carries the provider message, never the key', async () => {
    reply = () => ({
      status: 401,
      body: { error: { message: 'Incorrect API key provided: sk-test-secret.', type: 'invalid_request_error', code: 'invalid_api_key' } },
    });
    const err = await make().embed(['t-1']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect((err as Error).message).toMatch(/401: Incorrect API key provided/);
    expect((err as Error).message).not.toContain('sk-test-secret');
  });

  test('500 with a plain-text body', async () => {
    reply = () => ({ status: 500, body: 'upstream model crashed' });
    await expect(make().embed(['t-1'])).rejects.toThrow(/answered 500: upstream model crashed/);
  });

  test.each([
    ['not JSON', 'this is not json', /not JSON/],
    ['no data', { object: 'list' }, /no data array/],
    ['too few embeddings', { data: [{ index: 0, embedding: [1, 2, 3] }] }, /1 embeddings for 2 inputs/],
    ['repeated index', { data: [{ index: 0, embedding: [1, 2, 3] }, { index: 0, embedding: [1, 2, 3] }] }, /repeated index/],
    ['embedding not numbers', { data: [{ index: 0, embedding: 'abc' }, { index: 1, embedding: [1, 2, 3] }] }, /not an array of numbers/],
    ['lengths differ', { data: [{ index: 0, embedding: [1, 2, 3] }, { index: 1, embedding: [1, 2] }] }, /different lengths/],
  ])('malformed body (%s) -> EmbeddingError', async (_name, body, message) => {
    reply = () => ({ body });
    const err = await make().embed(['t-1', 't-2']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect((err as Error).message).toMatch(message);
  });

  test('a slow server -> EmbeddingError after timeoutMs', async () => {
    // The server would answer only after the test's own timeout: a rejection at all proves the client gave up.
    reply = (req) => ({ ...wellFormed(req), delayMs: 120_000 });
    await expect(make({ timeoutMs: 100 }).embed(['t-1'])).rejects.toThrow(/did not answer within 100 ms/);
  });

  test('the caller aborting -> EmbeddingError', async () => {
    reply = (req) => ({ ...wellFormed(req), delayMs: 2_000 });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 50);
    await expect(make().embed(['t-1'], ctl.signal)).rejects.toThrow(/aborted/);
  });

  test('an unreachable endpoint -> EmbeddingError naming the cause', async () => {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    await expect(make({ baseUrl: `http://127.0.0.1:${port}` }).embed(['t-1'])).rejects.toThrow(/failed: .*ECONNREFUSED/);
  });

  test('dimension is learned from the first answer (ensureDimension probes once), then enforced', async () => {
    const embedder = make();
    expect(embedder.dimension).toBe(0);
    expect(await Promise.all([embedder.ensureDimension(), embedder.ensureDimension()])).toEqual([3, 3]);
    expect(seen).toHaveLength(1);
    expect(embedder.dimension).toBe(3);
    expect(await embedder.ensureDimension()).toBe(3);
    expect(seen).toHaveLength(1);

    reply = ({ body }) => ({ body: { data: body.input.map((_, index) => ({ index, embedding: [1, 2] })) } });
    await expect(embedder.embed(['t-1'])).rejects.toThrow(/returned 2-dimensional vectors .* expected 3/);
  });

  test('a configured dimension is known up front and checked', async () => {
    const embedder = make({ dimension: 4 });
    expect(embedder.dimension).toBe(4);
    expect(await embedder.ensureDimension()).toBe(4);
    expect(seen).toHaveLength(0);
    await expect(embedder.embed(['t-1'])).rejects.toThrow(/expected 4/);
  });

  test('createEmbedders: local only, or the HTTP endpoint as default beside the local model', async () => {
    const localOnly = createEmbedders({});
    expect(localOnly.default.model).toBe(LOCAL_EMBEDDING_MODEL);
    expect(localOnly.byModel(LOCAL_EMBEDDING_MODEL)).toBe(localOnly.default);
    expect(localOnly.byModel('text-embedding-test')).toBeUndefined();
    await localOnly.close();

    const both = createEmbedders({ baseUrl, apiKey: 'k', model: 'text-embedding-test', dimension: 3, costPerMillionTokensUsd: 0.02 });
    expect(both.default).toBeInstanceOf(HttpEmbedder);
    expect(both.default.dimension).toBe(3);
    expect(both.byModel('text-embedding-test')).toBe(both.default);
    expect(both.byModel(LOCAL_EMBEDDING_MODEL)?.dimension).toBe(512);
    expect((await both.default.embed(['t-5'])).vectors[0]).toEqual(normalize([1, 5, 0]));
    await both.close();

    expect(() => createEmbedders({ baseUrl })).toThrow(/EMBEDDINGS_MODEL/);
    expect(() => createEmbedders({ model: 'm' })).toThrow(/EMBEDDINGS_BASE_URL/);
    expect(() => createEmbedders({ baseUrl, model: LOCAL_EMBEDDING_MODEL })).toThrow(/built-in/);
  });
});
