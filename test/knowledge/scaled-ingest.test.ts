import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnServer } from '../support/cli.js';
import { bootstrappedDatabase, dbMode, request } from '../support/harness.js';
import { type FakeEmbeddings, startFakeEmbeddings } from './helpers.js';

/** Scaled out: an API-only process takes the upload, BullMQ carries the ingest job to a worker process. */
let fake: FakeEmbeddings;
beforeAll(async () => {
  fake = await startFakeEmbeddings();
});
afterAll(() => fake.close());

describe.runIf(dbMode() === 'postgres' && Boolean(process.env.TEST_REDIS_URL))('knowledge ingest in scaled mode', () => {
  it('ingests documents uploaded through the API process in the worker process', async () => {
    const { workspaceId, apiKey, env: base } = await bootstrappedDatabase();
    const env = { ...base, REDIS_URL: process.env.TEST_REDIS_URL, EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64', WEFT_JOB_LEASE_MS: '2000' };
    const api = await spawnServer(env, await freePort(), 'api');
    const worker = await spawnServer(env, 0, 'worker');
    try {
      const h = { 'x-api-key': apiKey };
      const kb = await request(`${api.url}/api/v1/knowledge`, 'POST', { workspaceId, name: 'scaled' }, h);
      expect(kb.status).toBe(200);
      const baseId: string = kb.body.data.knowledgeBase.id;
      const docs = await Promise.all(['alpha', 'beta', 'gamma'].map((w) =>
        request(`${api.url}/api/v1/knowledge/${baseId}/documents`, 'POST', { workspaceId, filename: `${w}.txt`, content: `${w} ${w} notes about ${w}` }, h)));
      for (const d of docs) {
        expect(d.status).toBe(200);
        let doc: any;
        for (let k = 0; k < 300; k++) {
          doc = (await request(`${api.url}/api/v1/knowledge/${baseId}/documents/${d.body.data.document.id}?workspaceId=${workspaceId}`, 'GET', undefined, h)).body.data.document;
          if (doc.processingStatus === 'completed' || doc.processingStatus === 'failed') break;
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(doc.processingStatus).toBe('completed');
      }
      const found = await request(`${api.url}/api/v1/knowledge/search`, 'POST', { workspaceId, knowledgeBaseIds: [baseId], query: 'beta notes', topK: 1 }, h);
      expect(found.body.data.results[0].documentName).toBe('beta.txt');
    } finally {
      for (const s of [api, worker]) {
        s.child.kill('SIGTERM');
        await new Promise((r) => s.child.once('exit', r));
      }
    }
  }, 120_000);
});
