import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { KnowledgeClient, uniqueName } from './helpers.js';

// Hybrid retrieval (issue 28) through the HTTP API on the local model: an exact identifier that the
// vector ranking alone puts low is found first by the default (hybrid) search; `searchMode: "vector"`
// keeps the reference's ranking; every similarity stays in [0, 1].

let t: TestServer;
let k: KnowledgeClient;
let baseId: string;

// Ordinary operations prose; one paragraph of the incident log names the error code the question asks about.
const docs: Record<string, string> = {
  'quota.md': '# Storage quotas\n\nEvery workspace has a storage quota. When uploads exceed it, new files are refused until old ones are deleted or the plan is upgraded. Administrators see the usage per workspace on the billing page.',
  'incidents.md': '# Incident log\n\nOn Monday the nightly backup ran late because the disk was slow. On Tuesday a deploy was rolled back after health checks failed. On Wednesday the billing export job stopped with error ERR_LEDGER_4471 when two invoices shared one number; it was resumed after the duplicate was removed. On Thursday nothing happened.',
  'errors.md': '# Error handling\n\nErrors are shown to the user with a message and a code. Retry transient errors with backoff; report permanent errors to support with the request id.',
  'ledger.md': '# The ledger\n\nThe ledger records every charge and refund. Balances are computed from ledger entries, and invoices are numbered in sequence.',
};

beforeAll(async () => {
  t = await startTestServer();
  k = new KnowledgeClient(t);
  baseId = (await k.createBase(uniqueName('Ops'))).id;
  for (const [name, content] of Object.entries(docs)) {
    const doc = await k.uploadText(baseId, name, content);
    expect((await k.processed(baseId, doc.id)).processingStatus).toBe('completed');
  }
});
afterAll(async () => {
  await t?.close();
});

const QUESTION = 'What does ERR_LEDGER_4471 mean?';

describe('search modes', () => {
  it('ranks the chunk holding an exact error code first by default (hybrid), where vector search alone does not', async () => {
    const vector = await k.search({ knowledgeBaseIds: [baseId], query: QUESTION, searchMode: 'vector' });
    expect(vector.status).toBe(200);
    expect(vector.body.data.mode).toBe('vector');
    // The premise: on meaning alone, the documents about errors and the ledger look closer.
    expect(vector.body.data.results[0].documentName).not.toBe('incidents.md');

    const byDefault = await k.search({ knowledgeBaseIds: [baseId], query: QUESTION, topK: 3 });
    expect(byDefault.status).toBe(200);
    expect(byDefault.body.data.mode).toBe('hybrid');
    expect(byDefault.body.data.results[0].documentName).toBe('incidents.md');
    expect(byDefault.body.data.results[0].content).toContain('ERR_LEDGER_4471');
  });

  it('keeps every result field of the contract, with similarity a number in [0, 1] in both modes', async () => {
    for (const searchMode of ['vector', 'hybrid']) {
      // A query unlike every document: vector hits stop short of cosine distance 1 (the reference's cutoff), so
      // they report above 0; a full-text hit of hybrid search past it reports 0, never less.
      const r = await k.search({ knowledgeBaseIds: [baseId], query: 'zebra giraffe savanna ledger', searchMode, topK: 10 });
      expect(r.status).toBe(200);
      expect(r.body.data.results.length).toBe(Object.keys(docs).length);
      for (const hit of r.body.data.results) {
        expect(Object.keys(hit).sort()).toEqual(['chunkIndex', 'content', 'documentId', 'documentName', 'knowledgeBaseId', 'metadata', 'similarity', 'sourceUrl']);
        expect(hit.similarity).toBeGreaterThanOrEqual(0);
        expect(hit.similarity).toBeLessThanOrEqual(1);
      }
    }
  });

  it('accepts the earlier `mode` name, and refuses unknown modes and empty searches', async () => {
    const r = await k.search({ knowledgeBaseIds: [baseId], query: QUESTION, mode: 'vector' });
    expect(r.body.data.mode).toBe('vector');
    const bad = await k.search({ knowledgeBaseIds: [baseId], query: QUESTION, searchMode: 'keyword' });
    expect(bad.status).toBe(400);
    const empty = await k.search({ knowledgeBaseIds: [baseId], query: '  ' });
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('Either query or tagFilters must be provided');
  });

  it('finds nothing by full text for a query of stop words only, and still answers by vector', async () => {
    const r = await k.search({ knowledgeBaseIds: [baseId], query: 'the of and', topK: 2 });
    expect(r.status).toBe(200);
    expect(r.body.data.results.length).toBe(2);
  });
});
