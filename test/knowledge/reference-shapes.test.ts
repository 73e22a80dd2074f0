import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { type FakeEmbeddings, KnowledgeClient, startFakeEmbeddings, uniqueName } from './helpers.js';

// Where the reference service's knowledge API is specific (sim-api 10.1, 10.3, 10.4): the connector fields of
// bases and documents, the vector search's distance cutoff (by how many bases are searched; hybrid keeps its
// full-text hits), and tags winning over chunk metadata of the same name in a hit's `metadata`.
//
// The embeddings are the fake endpoint's bags of words (helpers.ts), so distances are known exactly. Each
// chunk is embedded led by its document's title (the filename without extension). Word buckets (of 64):
// zebra 6, near 40, weak 56, lorem 55, far 23, kettle 19, kettles 0. So, for the query "zebra":
//   near.txt "zebra zebra"        -> cosine similarity 2 / sqrt(5)  = 0.894 (distance 0.106)
//   weak.txt "zebra lorem x6"     -> 1 / sqrt(38)                  = 0.162 (distance 0.838)
//   far.txt  "kettle"             -> 0                                     (distance 1: no shared word)
// and "kettles" shares no bucket with any of them, but its stem matches "kettle" in full text.

let fake: FakeEmbeddings;
let t: TestServer;
let k: KnowledgeClient;
let baseId: string;
/** Three more bases of the same model, holding nothing that matches: searching all four is "more than 3". */
const emptyBases: string[] = [];

const names = (r: { body: any }) => (r.body.data.results as { documentName: string }[]).map((h) => h.documentName);

beforeAll(async () => {
  fake = await startFakeEmbeddings();
  t = await startTestServer({ env: { EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64', EMBEDDINGS_API_KEY: 'sk-test' } });
  k = new KnowledgeClient(t);
  baseId = (await k.createBase(uniqueName('Cutoff'))).id;
  for (const [name, content] of [['near.txt', 'zebra zebra'], ['weak.txt', 'zebra lorem lorem lorem lorem lorem lorem'], ['far.txt', 'kettle']]) {
    const doc = await k.uploadText(baseId, name as string, content as string);
    expect((await k.processed(baseId, doc.id)).processingStatus).toBe('completed');
  }
  for (let i = 0; i < 3; i++) emptyBases.push((await k.createBase(uniqueName('Empty'))).id);
});
afterAll(async () => {
  await t?.close();
  fake?.close();
});

describe('vector distance cutoff', () => {
  it('answers only chunks below cosine distance 1.0 when searching up to 3 bases', async () => {
    const r = await k.search({ knowledgeBaseIds: [baseId], query: 'zebra', searchMode: 'vector', topK: 10 });
    expect(r.status, r.text).toBe(200);
    expect(names(r)).toEqual(['near.txt', 'weak.txt']);
    const [near, weak] = r.body.data.results;
    expect(near.similarity).toBeCloseTo(2 / Math.sqrt(5), 5);
    expect(weak.similarity).toBeCloseTo(1 / Math.sqrt(38), 5);
    expect(r.body.data.totalResults).toBe(2);
    // Three bases are still "up to 3".
    const three = await k.search({ knowledgeBaseIds: [baseId, ...emptyBases.slice(0, 2)], query: 'zebra', searchMode: 'vector' });
    expect(names(three)).toEqual(['near.txt', 'weak.txt']);
    // A query near nothing answers nothing, rather than every chunk at similarity 0.
    const none = await k.search({ knowledgeBaseIds: [baseId], query: 'kettles', searchMode: 'vector' });
    expect(none.status, none.text).toBe(200);
    expect(none.body.data).toMatchObject({ results: [], totalResults: 0 });
  });

  it('tightens the cutoff to distance 0.8 when searching more than 3 bases', async () => {
    const r = await k.search({ knowledgeBaseIds: [baseId, ...emptyBases], query: 'zebra', searchMode: 'vector' });
    expect(r.status, r.text).toBe(200);
    expect(names(r)).toEqual(['near.txt']);
    // The same base named twice is one base.
    const repeated = await k.search({ knowledgeBaseIds: [baseId, baseId, baseId, baseId], query: 'zebra', searchMode: 'vector' });
    expect(names(repeated)).toEqual(['near.txt', 'weak.txt']);
  });

  it('applies the cutoff to the vector leg of hybrid search, and keeps the full-text hits whatever their distance', async () => {
    // "kettles" matches far.txt only by its stem: no vector hit at all, the full-text hit is kept (similarity 0).
    const keyword = await k.search({ knowledgeBaseIds: [baseId], query: 'kettles' });
    expect(keyword.status, keyword.text).toBe(200);
    expect(keyword.body.data.mode).toBe('hybrid');
    expect(names(keyword)).toEqual(['far.txt']);
    expect(keyword.body.data.results[0].similarity).toBe(0);
    // Over four bases weak.txt is past the vector cutoff, but it holds the query's word: hybrid still finds it.
    const wide = await k.search({ knowledgeBaseIds: [baseId, ...emptyBases], query: 'zebra' });
    expect(names(wide).sort()).toEqual(['near.txt', 'weak.txt']);
    // The vector-only candidate far.txt (distance 1, no shared word) is not brought in to fill topK.
    const narrow = await k.search({ knowledgeBaseIds: [baseId], query: 'zebra', topK: 10 });
    expect(names(narrow).sort()).toEqual(['near.txt', 'weak.txt']);
  });
});

describe('reference wire fields', () => {
  it('gives every knowledge base object connectorTypes: [] (create, list, get, update)', async () => {
    const created = await k.call('POST', '/api/v1/knowledge', { workspaceId: k.workspaceId, name: uniqueName('Fields') });
    expect(created.status, created.text).toBe(200);
    const kb = created.body.data.knowledgeBase;
    expect(kb.connectorTypes).toEqual([]);
    const list = await k.call('GET', `/api/v1/knowledge?workspaceId=${k.workspaceId}`);
    for (const b of list.body.data.knowledgeBases) expect(b.connectorTypes).toEqual([]);
    const got = await k.call('GET', `/api/v1/knowledge/${kb.id}?workspaceId=${k.workspaceId}`);
    expect(got.body.data.knowledgeBase.connectorTypes).toEqual([]);
    const put = await k.call('PUT', `/api/v1/knowledge/${kb.id}`, { workspaceId: k.workspaceId, description: 'described' });
    expect(put.status, put.text).toBe(200);
    expect(put.body.data.knowledgeBase.connectorTypes).toEqual([]);
  });

  it('gives every document object connectorId: null and connectorType: null (upload, list, get, update)', async () => {
    const base = await k.createBase(uniqueName('Docs'));
    const nulls = { connectorId: null, connectorType: null };
    const json = await k.call('POST', `/api/v1/knowledge/${base.id}/documents`, { workspaceId: k.workspaceId, filename: 'a.txt', content: 'zebra notes' });
    expect(json.status, json.text).toBe(200);
    expect(json.body.data.document).toMatchObject(nulls);
    const multipart = await k.uploadFiles(base.id, [{ name: 'b.md', type: 'text/markdown', bytes: new TextEncoder().encode('# B\n\nkettle notes') }]);
    expect(multipart.status, multipart.text).toBe(200);
    for (const d of multipart.body.data.documents) expect(d).toMatchObject(nulls);
    const list = await k.call('GET', `/api/v1/knowledge/${base.id}/documents?workspaceId=${k.workspaceId}`);
    expect(list.body.data.documents).toHaveLength(2);
    for (const d of list.body.data.documents) expect(d).toMatchObject(nulls);
    const id = json.body.data.document.id;
    const got = await k.document(base.id, id);
    expect(got.body.data.document).toMatchObject(nulls);
    const patched = await k.call('PATCH', `/api/v1/knowledge/${base.id}/documents/${id}`, { workspaceId: k.workspaceId, enabled: false });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data.document).toMatchObject({ ...nulls, enabled: false });
  });
});

describe('search hit metadata', () => {
  it("lets a document's tag win over the chunk's own metadata key of the same name", async () => {
    const base = await k.createBase(uniqueName('Tagged'));
    const def = await k.call('POST', `/api/v1/knowledge/${base.id}/tag-definitions`, { workspaceId: k.workspaceId, displayName: 'headings', fieldType: 'text' });
    expect(def.status, def.text).toBe(200);
    const doc = await k.uploadText(base.id, 'guide.md', '# Zebra guide\n\nZebra crossings give pedestrians the right of way.', { tagValues: { headings: 'from the tag' } });
    expect((await k.processed(base.id, doc.id)).processingStatus).toBe('completed');
    // The premise: the chunk carries a `headings` key of its own.
    const chunks = await k.chunks(base.id, doc.id);
    expect(chunks.chunks[0].metadata.headings).toEqual(['Zebra guide']);

    const byQuery = await k.search({ knowledgeBaseIds: [base.id], query: 'zebra crossing' });
    expect(byQuery.status, byQuery.text).toBe(200);
    expect(byQuery.body.data.results[0].metadata.headings).toBe('from the tag');
    const byTag = await k.search({ knowledgeBaseIds: [base.id], tagFilters: [{ tagName: 'headings', value: 'from the tag' }] });
    expect(byTag.status, byTag.text).toBe(200);
    expect(byTag.body.data.results[0].metadata.headings).toBe('from the tag');
  });
});
