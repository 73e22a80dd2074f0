import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { freePort, spawnServer } from '../support/cli.js';
import { bootstrappedDatabase, request } from '../support/harness.js';
import { type FakeEmbeddings, startFakeEmbeddings } from './helpers.js';

/**
 * Kills the server (SIGKILL) while a document is being ingested (its embeddings provider holds the
 * request, so the kill lands mid-ingest every time), checks that nothing of it was indexed, then starts a
 * new server on the same database: the ingest is taken over and completes once, with every chunk once.
 */
let fake: FakeEmbeddings;
beforeAll(async () => {
  fake = await startFakeEmbeddings();
});
afterAll(() => fake.close());

describe('document ingest across a crash', () => {
  it('leaves no half-indexed document and finishes after a restart', async () => {
    const { workspaceId, apiKey, env: base, where } = await bootstrappedDatabase();
    const env = { ...base, WEFT_JOB_LEASE_MS: '2000', EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64' };
    const headers = { 'x-api-key': apiKey };
    let server = await spawnServer(env, await freePort());
    try {
      const kb = await request(`${server.url}/api/v1/knowledge`, 'POST', {
        workspaceId, name: 'crash', chunkingConfig: { maxSize: 100, minSize: 20, overlap: 0 },
      }, headers);
      expect(kb.status).toBe(200);
      const baseId: string = kb.body.data.knowledgeBase.id;
      // Enough text for several embedding batches (the service sends 32 chunks at a time).
      const words = 'the team reviews every invoice before the release while the server keeps a record of each request and its answer'.split(' ');
      const paragraphs = Array.from({ length: 80 }, (_, i) => `Part ${i}: ${Array.from({ length: 70 }, (_, j) => words[(i * 5 + j * 3) % words.length]).join(' ')}.`);
      fake.hold = true;
      const requestsBefore = fake.seen.requests;
      const up = await request(`${server.url}/api/v1/knowledge/${baseId}/documents`, 'POST', {
        workspaceId, filename: 'long.txt', content: paragraphs.join('\n\n'),
      }, headers);
      expect(up.status).toBe(200);
      const docId: string = up.body.data.document.id;

      // The ingest is now waiting on its first embedding batch: kill the process there.
      const deadline = Date.now() + 30_000;
      while (fake.seen.requests === requestsBefore) {
        if (Date.now() > deadline) throw new Error('the ingest never asked for embeddings');
        await new Promise((r) => setTimeout(r, 20));
      }
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));

      const db = await connectDatabase({ dataDir: where.dataDir ?? '', databaseUrl: where.databaseUrl });
      try {
        const [row] = await db.query<{ processing_status: string; chunks: number }>(
          'SELECT processing_status, (SELECT count(*)::int FROM knowledge_chunks WHERE document_id = $1) AS chunks FROM knowledge_documents WHERE id = $1',
          [docId],
        );
        expect(row).toEqual({ processing_status: 'processing', chunks: 0 });
      } finally {
        await db.close();
      }

      fake.hold = false;
      server = await spawnServer(env, await freePort());
      const url = `${server.url}/api/v1/knowledge/${baseId}/documents/${docId}?workspaceId=${workspaceId}`;
      let doc: any;
      const until = Date.now() + 60_000;
      for (;;) {
        doc = (await request(url, 'GET', undefined, headers)).body.data.document;
        if (doc.processingStatus === 'completed' || doc.processingStatus === 'failed') break;
        if (Date.now() > until) throw new Error(`still ${doc.processingStatus}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(doc.processingStatus).toBe('completed');
      expect(doc.chunkCount).toBeGreaterThan(32);
      const indexes: number[] = [];
      for (let offset = 0; offset < doc.chunkCount; offset += 100) {
        const page = await request(`${server.url}/api/v1/knowledge/${baseId}/documents/${docId}/chunks?workspaceId=${workspaceId}&limit=100&offset=${offset}`, 'GET', undefined, headers);
        indexes.push(...page.body.data.chunks.map((c: { chunkIndex: number }) => c.chunkIndex));
        expect(page.body.data.pagination.total).toBe(doc.chunkCount);
      }
      expect(indexes).toEqual([...Array(doc.chunkCount).keys()]);
    } finally {
      fake.hold = false;
      server.child.kill('SIGKILL');
    }
  }, 120_000);
});
