import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, startTestServer, type TestServer } from '../support/harness.js';
import { FAKE_EMBEDDING_DIMENSION, type FakeEmbeddings, KnowledgeClient, startFakeEmbeddings, uniqueName } from './helpers.js';

/**
 * Knowledge bases on a hosted OpenAI-compatible embeddings endpoint (a local server speaking its wire
 * format), beside a base the local model indexed earlier on the same database: both stay searchable,
 * they cannot be searched together, and the endpoint's tokens are charged to the usage ledger.
 */

let fake: FakeEmbeddings;
beforeAll(async () => {
  fake = await startFakeEmbeddings();
});
afterAll(() => fake.close());

describe('hosted embeddings', () => {
  let t: TestServer | undefined;
  afterAll(async () => {
    await t?.close();
  });

  it('index new bases with the configured model, keep older local bases searchable, and bill the tokens', async () => {
    const where = await freshDatabase();
    // First the local model indexes a base.
    t = await startTestServer({ reuse: where });
    let k = new KnowledgeClient(t);
    const local = await k.createBase(uniqueName('Local'));
    const localDoc = await k.uploadText(local.id, 'tea.md', 'Green tea is brewed with water below boiling for two minutes.');
    expect((await k.processed(local.id, localDoc.id)).processingStatus).toBe('completed');
    const workspaceId = t.workspaceId;
    await t.close();

    // Then the same database behind a server configured with a hosted endpoint.
    t = await startTestServer({
      reuse: where,
      env: { EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64', EMBEDDINGS_API_KEY: 'sk-upstream', EMBEDDINGS_COST_PER_MILLION_TOKENS: '1000' },
    });
    k = new KnowledgeClient(t, workspaceId);
    const remote = await k.createBase(uniqueName('Remote'));
    expect(remote).toMatchObject({ embeddingModel: 'fake-embed-64', embeddingDimension: FAKE_EMBEDDING_DIMENSION });
    const docs = [
      await k.uploadText(remote.id, 'coffee.md', 'Espresso is coffee pressed through fine grounds with hot water under pressure.'),
      await k.uploadText(remote.id, 'bikes.md', 'Bicycle chains need oil every few hundred kilometres to avoid rust.'),
    ];
    for (const d of docs) expect((await k.processed(remote.id, d.id)).processingStatus).toBe('completed');
    expect(fake.seen).toMatchObject({ auth: 'Bearer sk-upstream', model: 'fake-embed-64' });

    const hit = await k.search({ knowledgeBaseIds: [remote.id], query: 'how to oil a bicycle chain', topK: 2 });
    expect(hit.status, hit.text).toBe(200);
    expect(hit.body.data.results[0].documentName).toBe('bikes.md');
    const old = await k.search({ knowledgeBaseIds: [local.id], query: 'brewing tea', topK: 1 });
    expect(old.status, old.text).toBe(200);
    expect(old.body.data.results[0].documentName).toBe('tea.md');
    // The provider down: the search answers 503 with Retry-After, not a 500.
    fake.fail = true;
    const down = await k.search({ knowledgeBaseIds: [remote.id], query: 'bicycle', topK: 1 });
    fake.fail = false;
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('2');
    expect(down.body.error).toContain('upstream is down');
    const mixed = await k.search({ knowledgeBaseIds: [local.id, remote.id], query: 'drinks' });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error).toContain('different embedding models');

    // Ingest and query tokens are recorded as embedding costs of the workspace's account.
    const events = await t.server.ctx.db.query<{ n: number; usd: number }>(
      `SELECT count(*)::int AS n, COALESCE(sum(amount_usd), 0)::float8 AS usd FROM usage_events WHERE source = 'embeddings' AND account = $1`,
      [`workspace:${workspaceId}`],
    );
    expect(events[0]?.n).toBe(3); // two documents and one search of the hosted base (the local model is free)
    expect(events[0]?.usd).toBeGreaterThan(0);
  });
});

describe('waiting for a document', () => {
  let t: TestServer | undefined;
  afterAll(async () => {
    fake.hold = false;
    fake.releaseHeld();
    await t?.close();
  });

  it('answers GET ?wait=N once processing ends (one request instead of a poll per second), else after N seconds; refuses N outside 0..30', async () => {
    t = await startTestServer({
      env: { EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64', EMBEDDINGS_DIMENSION: String(FAKE_EMBEDDING_DIMENSION) },
    });
    const k = new KnowledgeClient(t);
    const kb = await k.createBase(uniqueName('Waiting'));
    // The provider holds the ingest's embedding request: the document stays in processing meanwhile.
    fake.hold = true;
    const asked = new Promise<void>((resolve) => (fake.onRequest = resolve));
    const doc = await k.uploadText(kb.id, 'tea.md', 'Green tea is brewed with water below boiling for two minutes.');
    await asked;
    const url = `/api/v1/knowledge/${kb.id}/documents/${doc.id}?workspaceId=${k.workspaceId}`;
    expect((await k.call('GET', url)).body.data.document.processingStatus).toBe('processing');

    // Time up while still processing: the answer is the document as it is.
    const short = await k.call('GET', `${url}&wait=1`);
    expect(short.status).toBe(200);
    expect(short.body.data.document.processingStatus).toBe('processing');

    // A wait in flight when the provider answers: the same request answers the completed document.
    const waiting = k.call('GET', `${url}&wait=30`);
    setTimeout(() => {
      fake.hold = false;
      fake.releaseHeld();
    }, 300);
    const done = await waiting;
    expect(done.status).toBe(200);
    expect(done.body.data.document).toMatchObject({ id: doc.id, processingStatus: 'completed', chunkCount: 1 });

    for (const wait of ['31', '-1', '1.5', 'soon']) {
      const bad = await k.call('GET', `${url}&wait=${wait}`);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatch(/wait/);
    }
  });
});

describe('upload size limit', () => {
  let t: TestServer | undefined;
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a file over WEFT_KNOWLEDGE_MAX_FILE_BYTES, or files over it together, with a 413, as multipart and as JSON, writing nothing', async () => {
    t = await startTestServer({ env: { WEFT_KNOWLEDGE_MAX_FILE_BYTES: '2048' } });
    const k = new KnowledgeClient(t);
    const kb = await k.createBase(uniqueName('Limited'));
    const big = Buffer.alloc(3000, 'a');
    const multipart = await k.uploadFiles(kb.id, [{ name: 'big.txt', bytes: big }]);
    expect(multipart.status).toBe(413);
    expect(multipart.body.error).toContain('File size exceeds');
    const json = await k.call('POST', `/api/v1/knowledge/${kb.id}/documents`, { workspaceId: k.workspaceId, filename: 'big.txt', content: big.toString() });
    expect(json.status).toBe(413);
    const b64 = await k.call('POST', `/api/v1/knowledge/${kb.id}/documents`, { workspaceId: k.workspaceId, filename: 'big.txt', contentBase64: big.toString('base64') });
    expect(b64.status).toBe(413);
    const together = await k.uploadFiles(kb.id, [{ name: 'a.txt', bytes: Buffer.alloc(1500, 'a') }, { name: 'b.txt', bytes: Buffer.alloc(1500, 'b') }]);
    expect(together.status).toBe(413);
    expect(together.body.error).toContain('together');
    expect((await k.uploadFiles(kb.id, [{ name: 'small.txt', bytes: Buffer.alloc(2048, 'b') }])).status).toBe(200);
    const list = await k.call('GET', `/api/v1/knowledge/${kb.id}/documents?workspaceId=${k.workspaceId}`);
    expect(list.body.data.documents.map((d: { filename: string }) => d.filename)).toEqual(['small.txt']);
  });
});
