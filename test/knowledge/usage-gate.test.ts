import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asNewWorkspace, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';
import { type FakeEmbeddings, KnowledgeClient, startFakeEmbeddings, uniqueName } from './helpers.js';

// The usage cap on the knowledge API (sim-api 10.3 and 10.4): once the billed account's cost in the period has
// reached its plan's limit, an upload and a search with a query answer 402 and write nothing; a tag-only
// search (nothing embedded, nothing billed) still answers. The account is pushed over its limit through the
// public API: the `pro` plan here allows $0.005 a period, which one run's base charge uses up.

let fake: FakeEmbeddings;
let t: TestServer;
/** A `pro` workspace with its own key: over its limit after one run. */
let ws: TestServer;
let k: KnowledgeClient;
let baseId: string;
let docId: string;

const USAGE_REFUSAL = /^Usage limit exceeded: \$[0-9.]+ used of \$[0-9.]+ limit\. Please upgrade your plan or raise your usage limit to continue\.$/;

beforeAll(async () => {
  fake = await startFakeEmbeddings();
  t = await startTestServer({
    env: {
      WEFT_PLAN_LIMITS: JSON.stringify({ pro: { usageLimitUsd: 0.005 } }),
      EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64', EMBEDDINGS_API_KEY: 'sk-test',
    },
  });
  ws = await asNewWorkspace(t, 'pro', 'kb-usage');
  k = new KnowledgeClient(t, ws.workspaceId, ws.apiKey);
  baseId = (await k.createBase(uniqueName('Billed'))).id;
  const tag = await k.call('POST', `/api/v1/knowledge/${baseId}/tag-definitions`, { workspaceId: ws.workspaceId, displayName: 'Team', fieldType: 'text' });
  expect(tag.status, tag.text).toBe(200);
  // Under the limit, uploads and searches pass.
  const doc = await k.uploadText(baseId, 'zebra.txt', 'Zebra crossings give pedestrians the right of way.', { tagValues: { Team: 'roads' } });
  docId = doc.id;
  expect((await k.processed(baseId, docId)).processingStatus).toBe('completed');
  const under = await k.search({ knowledgeBaseIds: [baseId], query: 'zebra crossing' });
  expect(under.status, under.text).toBe(200);
  expect(under.body.data.results[0].documentId).toBe(docId);
});
afterAll(async () => {
  await t?.close();
  fake?.close();
});

/** Runs one workflow in the workspace: its $0.005 base charge takes the period's cost to the limit. */
async function useUpTheLimit(): Promise<void> {
  const id = await deploy(ws, uniqueName('spend'), { blocks: [start(), fn('f', 'return 1', 'F')], edges: [{ from: 'start', to: 'f' }] });
  const run = await ws.call('POST', `/api/workflows/${id}/execute`, {});
  expect(run.status, run.text).toBe(200);
  const limits = await ws.call('GET', '/api/users/me/usage-limits');
  expect(limits.body.usage).toMatchObject({ currentPeriodCost: 0.005, limit: 0.005, plan: 'pro', isExceeded: true });
}

async function documentRows(): Promise<number> {
  const rows = await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM knowledge_documents WHERE knowledge_base_id = $1', [baseId]);
  return Number(rows[0]?.n);
}

describe('the usage cap on knowledge requests', () => {
  it('refuses uploads and searches with a query with 402 once the account is over its limit, writing nothing; tag-only searches still answer', async () => {
    await useUpTheLimit();
    const seenBefore = fake.seen.inputs;

    // Uploads, as JSON and as multipart: 402 with the execute route's usage message, and no document row.
    const json = await k.call('POST', `/api/v1/knowledge/${baseId}/documents`, { workspaceId: ws.workspaceId, filename: 'more.txt', content: 'More about zebras.' });
    expect(json.status, json.text).toBe(402);
    expect(json.body).toEqual({ error: expect.stringMatching(USAGE_REFUSAL) });
    const multipart = await k.uploadFiles(baseId, [{ name: 'more.md', type: 'text/markdown', bytes: new TextEncoder().encode('# More\n\nZebras again.') }]);
    expect(multipart.status, multipart.text).toBe(402);
    expect(multipart.body.error).toMatch(USAGE_REFUSAL);
    expect(await documentRows()).toBe(1);
    const list = await k.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${ws.workspaceId}`);
    expect(list.body.data.documents.map((d: { id: string }) => d.id)).toEqual([docId]);
    expect(list.body.data.pagination.total).toBe(1);

    // Searches with a query, in both modes: 402, and nothing embedded.
    for (const searchMode of ['hybrid', 'vector']) {
      const r = await k.search({ knowledgeBaseIds: [baseId], query: 'zebra crossing', searchMode });
      expect(r.status, r.text).toBe(402);
      expect(r.body).toEqual({ error: expect.stringMatching(USAGE_REFUSAL) });
    }
    expect(fake.seen.inputs).toBe(seenBefore);

    // A tag-only search is free: it still answers, with similarity 1.
    const tagOnly = await k.search({ knowledgeBaseIds: [baseId], tagFilters: [{ tagName: 'Team', value: 'roads' }] });
    expect(tagOnly.status, tagOnly.text).toBe(200);
    expect(tagOnly.body.data.results.map((h: { documentId: string; similarity: number }) => [h.documentId, h.similarity])).toEqual([[docId, 1]]);
    // So do reads and deletes.
    expect((await k.document(baseId, docId)).status).toBe(200);
  });

  it('checks in the reference order: a search is refused for usage before its bases are looked up, an upload after', async () => {
    const missing = '00000000-0000-4000-8000-00000000abcd';
    const search = await k.search({ knowledgeBaseIds: [missing], query: 'zebra' });
    expect(search.status, search.text).toBe(402);
    const upload = await k.call('POST', `/api/v1/knowledge/${missing}/documents`, { workspaceId: ws.workspaceId, filename: 'x.txt', content: 'x' });
    expect(upload.status, upload.text).toBe(404);
    // A blank query with no tag filters is still a 400, as before.
    expect((await k.search({ knowledgeBaseIds: [baseId], query: '   ' })).status).toBe(400);
  });

  it('bills per account: another workspace under its own limit still uploads and searches', async () => {
    const other = new KnowledgeClient(t);
    const base = await other.createBase(uniqueName('Unbilled'));
    const doc = await other.uploadText(base.id, 'zebra.txt', 'Zebra crossings are painted white.');
    expect((await other.processed(base.id, doc.id)).processingStatus).toBe('completed');
    const r = await other.search({ knowledgeBaseIds: [base.id], query: 'zebra crossing' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.results[0].documentId).toBe(doc.id);
  });
});
