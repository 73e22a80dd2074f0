import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { type FakeEmbeddings, KnowledgeClient, startFakeEmbeddings, uniqueName } from './helpers.js';

// Past WEFT_QUERY_TIMEOUT_MS a knowledge search is stopped as a table query is (test/tables/query-timeout.test.ts):
// a cancelled statement on PostgreSQL, the database taken back from it on the embedded one.
describe('a knowledge search past its time', () => {
  let fake: FakeEmbeddings;
  let t: TestServer;
  let k: KnowledgeClient;
  let baseId: string;

  beforeAll(async () => {
    fake = await startFakeEmbeddings();
    t = await startTestServer({
      env: { WEFT_QUERY_TIMEOUT_MS: '1', EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64', EMBEDDINGS_API_KEY: 'sk-upstream' },
    });
    k = new KnowledgeClient(t);
    baseId = (await k.createBase(uniqueName('Slow'))).id;
    // Hundreds of chunks, each of which a filter nothing passes has to be tested against.
    const paragraph = (i: number) => `Section ${i}. The river keeps the mill turning through the dry months of summer. `.repeat(12);
    const text = Array.from({ length: 3_000 }, (_, i) => paragraph(i)).join('\n\n');
    const doc = await k.uploadText(baseId, 'mill.txt', text);
    expect((await k.processed(baseId, doc.id, 120_000)).processingStatus).toBe('completed');
  }, 180_000);
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('is stopped and answered 503 naming the limit, and the base stays searchable', async () => {
    // The vector index is walked on (iteratively) through every chunk, looking for ten that pass.
    const r = await k.search({ knowledgeBaseIds: [baseId], query: 'the mill in summer', mode: 'vector', filters: { shelf: 'none' } });
    expect(r.status, r.text).toBe(503);
    expect(r.body).toMatchObject({ code: 'QUERY_TIMEOUT' });
    expect(r.body.error).toMatch(/search ran past 1 ms and was stopped/);
    const docs = await k.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${k.workspaceId}`);
    expect(docs.status).toBe(200);
  });
});
