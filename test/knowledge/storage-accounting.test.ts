import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { FAKE_EMBEDDING_DIMENSION, type FakeEmbeddings, type KnowledgeClient, otherWorkspace, startFakeEmbeddings, uniqueName } from './helpers.js';

// What knowledge documents count toward the workspace's storage limit (docs/architecture.md, Where limits are
// enforced): the file, the document's name and tags, and its chunks once indexed (src/knowledge/stored-bytes.ts).
// An audit filled a free workspace to its limit, then stored 11 MB of tags on 200 empty files and 10 times an
// upload's bytes in chunks, none of it counted; a workspace over its limit still took writes adding "0 bytes".

/** The free plan stores 40,000 bytes here; pro 10 MB. */
const FREE_BYTES = 40_000;
let t: TestServer;
let fake: FakeEmbeddings;
let adminKey: string;

beforeAll(async () => {
  fake = await startFakeEmbeddings();
  t = await startTestServer({
    env: {
      WEFT_PLAN_LIMITS: JSON.stringify({ free: { storageBytes: FREE_BYTES, apiPerMinute: 100_000 }, pro: { storageBytes: 10_000_000, apiPerMinute: 100_000 } }),
      // A small hosted model (64 dimensions) instead of loading the local one.
      EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64',
    },
  });
  adminKey = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: t.userId, type: 'personal', name: 'admin personal' })).secret;
});
afterAll(async () => {
  await t?.close();
  fake?.close();
});

const used = async (ws: KnowledgeClient): Promise<number> => {
  const r = await ws.call('GET', '/api/users/me/usage-limits');
  expect(r.status, r.text).toBe(200);
  return r.body.storage.usedBytes as number;
};

const documentCount = async (ws: KnowledgeClient, baseId: string): Promise<number> =>
  (await ws.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${ws.workspaceId}`)).body.data.pagination.total as number;

/** A document's own figure before it has chunks: file, name, MIME type, tags and tag slots as stored, and 200 bytes for its rows. */
const documentBytes = (d: { filename: string; fileSize: number }, mime: string, tagsJson = '{}', slotsJson = '{}') =>
  d.fileSize + 200 + Buffer.byteLength(d.filename) + Buffer.byteLength(mime) + Buffer.byteLength(tagsJson) + Buffer.byteLength(slotsJson);

/** Fifty tags of 1,000 characters, as the audit's empty files carried. */
const bigTags = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`t${i}`, 'v'.repeat(1000)]));

function emptyFiles(ws: KnowledgeClient, baseId: string, count: number, tags: Record<string, unknown>) {
  const form = new FormData();
  form.set('workspaceId', ws.workspaceId);
  form.set('tags', JSON.stringify(tags));
  for (let i = 0; i < count; i++) form.append('file', new Blob([]), `empty${i}.txt`);
  return ws.rawUpload(baseId, form);
}

/** A PDF that fails to parse: its bytes stay stored and counted, and it never gets chunks. */
const filler = (ws: KnowledgeClient, baseId: string, bytes: number) =>
  ws.call('POST', `/api/v1/knowledge/${baseId}/documents`, { workspaceId: ws.workspaceId, filename: 'fill.pdf', contentBase64: Buffer.alloc(bytes, 7).toString('base64') });

describe('knowledge storage accounting', () => {
  it('counts a document\'s name and tags besides its file: empty files with large tags are refused when they do not fit, nothing written', async () => {
    const ws = await otherWorkspace(t, 'free');
    const base = await ws.createBase(uniqueName('Tags'));
    const start = await used(ws);
    const fill = await filler(ws, base.id, 30_000);
    expect(fill.status, fill.text).toBe(200);
    expect((await ws.processed(base.id, fill.body.data.document.id)).processingStatus).toBe('failed');
    // The usage report holds the figure the checks use: the file and its document's own bytes.
    expect(await used(ws)).toBe(start + documentBytes(fill.body.data.document, 'application/pdf'));

    // 20 empty files with 50 KB of tags each: about a megabyte, far past the 10 KB left.
    const many = await emptyFiles(ws, base.id, 20, bigTags(50));
    expect(many.status, many.text).toBe(403);
    expect(many.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
    expect(await documentCount(ws, base.id)).toBe(1);
    const afterRefusal = await used(ws);
    expect(afterRefusal).toBe(start + documentBytes(fill.body.data.document, 'application/pdf'));

    // One empty file with 9 KB of tags fits, and counts them.
    const tags = bigTags(9);
    const one = await emptyFiles(ws, base.id, 1, tags);
    expect(one.status, one.text).toBe(200);
    expect(await used(ws) - afterRefusal).toBeGreaterThan(Buffer.byteLength(JSON.stringify(tags)));
  });

  it('refuses every adding write of a workspace over its limit, even one that adds no bytes, until space is freed', async () => {
    const ws = await otherWorkspace(t, 'pro');
    const base = await ws.createBase(uniqueName('Over'));
    const small = await ws.uploadText(base.id, 'note.txt', 'A short note about the quarterly budget.', { tags: { team: 'finance' } });
    expect((await ws.processed(base.id, small.id)).processingStatus).toBe('completed');
    const big = await filler(ws, base.id, FREE_BYTES + 5_000);
    expect(big.status, big.text).toBe(200);
    // The plan shrinks under the workspace's feet: it now stores more than the free plan allows.
    const moved = await request(`${t.url}/api/v1/workspaces/${ws.workspaceId}/plan`, 'PUT', { plan: 'free' }, { 'x-api-key': adminKey });
    expect(moved.status, moved.text).toBe(200);
    expect(await used(ws)).toBeGreaterThan(FREE_BYTES);

    const refused = async (r: { status: number; body: any; text: string }) => {
      expect(r.status, r.text).toBe(403);
      expect(r.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
      expect(r.body.error).toMatch(/more than its plan's 40000/);
    };
    // Tags replaced by the same tags: nothing added, still refused.
    await refused(await ws.call('PATCH', `/api/v1/knowledge/${base.id}/documents/${small.id}`, { workspaceId: ws.workspaceId, tags: { team: 'finance' } }));
    await refused(await ws.call('PATCH', `/api/v1/knowledge/${base.id}/documents/${small.id}`, { workspaceId: ws.workspaceId, tags: { team: 'finance and legal' } }));
    await refused(await emptyFiles(ws, base.id, 1, {}));
    await refused(await ws.call('POST', '/api/v1/knowledge', { workspaceId: ws.workspaceId, name: uniqueName('Another') }));
    await refused(await ws.call('POST', `/api/v1/knowledge/${base.id}/tag-definitions`, { workspaceId: ws.workspaceId, displayName: 'Owner', fieldType: 'text' }));
    const doc = await ws.call('GET', `/api/v1/knowledge/${base.id}/documents/${small.id}?workspaceId=${ws.workspaceId}`);
    expect(doc.body.data.document.tags).toEqual({ team: 'finance' });
    expect(await documentCount(ws, base.id)).toBe(2);

    // Writes that store nothing or free space pass.
    const disabled = await ws.call('PATCH', `/api/v1/knowledge/${base.id}/documents/${small.id}`, { workspaceId: ws.workspaceId, enabled: false });
    expect(disabled.status, disabled.text).toBe(200);
    const shorter = await ws.call('PATCH', `/api/v1/knowledge/${base.id}/documents/${small.id}`, { workspaceId: ws.workspaceId, tags: {} });
    expect(shorter.status, shorter.text).toBe(200);
    const deleted = await ws.call('DELETE', `/api/v1/knowledge/${base.id}/documents/${big.body.data.document.id}?workspaceId=${ws.workspaceId}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(await used(ws)).toBeLessThan(FREE_BYTES);
    const again = await ws.call('PATCH', `/api/v1/knowledge/${base.id}/documents/${small.id}`, { workspaceId: ws.workspaceId, tags: { team: 'finance' } });
    expect(again.status, again.text).toBe(200);
  });

  it('counts the chunks an ingest writes; a document whose chunks do not fit fails saying so, keeps none and is never embedded', async () => {
    const ws = await otherWorkspace(t, 'free');
    const base = await ws.createBase(uniqueName('Chunks'), { chunkingConfig: { maxSize: 100, minSize: 1, overlap: 20 } });
    expect(base.embeddingDimension).toBe(FAKE_EMBEDDING_DIMENSION);
    const start = await used(ws);

    // 1,000 bytes of text: its chunks fit, and the figure grows by their documented estimate.
    const words = ['ledger', 'invoice', 'budget', 'forecast', 'audit', 'payroll', 'expense', 'revenue'];
    const text = (n: number) => Array.from({ length: n }, (_, i) => words[i % words.length] + (i % 9 === 8 ? '.' : '')).join(' ');
    const fits = await ws.uploadText(base.id, 'fits.txt', text(140));
    const done = await ws.processed(base.id, fits.id);
    expect(done.processingStatus, done.processingError).toBe('completed');
    const chunks = await ws.chunks(base.id, fits.id, '&limit=100');
    expect(chunks.pagination.total).toBeGreaterThan(1);
    const chunkBytes = (chunks.chunks as { content: string; metadata: Record<string, unknown> }[])
      .reduce((n, c) => n + 2 * Buffer.byteLength(c.content) + Buffer.byteLength(JSON.stringify(c.metadata)) + 4 * FAKE_EMBEDDING_DIMENSION + 64, 0);
    const withChunks = await used(ws);
    expect(withChunks - start).toBe(documentBytes(done, 'text/plain') + chunkBytes);

    // 15 KB of text fits as a file (about 25 KB are free), but its chunks (twice their text and more) do not.
    const embedded = fake.seen.inputs;
    const big = await ws.uploadText(base.id, 'big.txt', text(2_100));
    expect(big.fileSize).toBeGreaterThan(14_000);
    const failed = await ws.processed(base.id, big.id);
    expect(failed.processingStatus).toBe('failed');
    expect(failed.processingError).toMatch(/^Storage limit exceeded: indexing the document needs \d+ bytes for its chunks/);
    expect(failed.processingError).toContain(`allows ${FREE_BYTES} bytes`);
    expect(failed.chunkCount).toBe(0);
    expect((await ws.chunks(base.id, big.id)).pagination.total).toBe(0);
    // Refused before the embedding work, and only the file and its row count.
    expect(fake.seen.inputs).toBe(embedded);
    expect(await used(ws)).toBe(withChunks + documentBytes(failed, 'text/plain'));
    const search = await ws.search({ knowledgeBaseIds: [base.id], query: 'payroll forecast' });
    expect(search.status, search.text).toBe(200);
    expect(new Set(search.body.data.results.map((r: { documentId: string }) => r.documentId))).toEqual(new Set([fits.id]));
  });
});
