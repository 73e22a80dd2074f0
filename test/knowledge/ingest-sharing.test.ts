import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { makePdf } from './files.js';
import { type FakeEmbeddings, KnowledgeClient, otherWorkspace, startFakeEmbeddings, uniqueName } from './helpers.js';

// Hostile text through the HTTP API: text built to make the parser backtrack is read in one pass (no
// wall-clock assertions: each input is sized so that the old code would have run far past the test's timeout,
// minutes of CPU, while the fixed code finishes well inside it), another workspace's document is ingested
// meanwhile, and deleting a document stops its ingest. The workers' fair sharing, the parse time limit and the
// termination of an aborted parse are in ingest-pool.unit.test.ts.

const MILLION = 1_000_000;

let fake: FakeEmbeddings;
beforeAll(async () => {
  fake = await startFakeEmbeddings();
});
afterAll(() => fake?.close());

const fakeEnv = () => ({ EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64' });

async function completedAt(k: KnowledgeClient, baseId: string, documentId: string): Promise<number> {
  const doc = await k.processed(baseId, documentId, 120_000);
  expect(doc.processingStatus, doc.processingError).toBe('completed');
  return Date.parse(doc.processingCompletedAt);
}

describe('hostile text on the default two ingest workers', () => {
  let t: TestServer;
  let k: KnowledgeClient;
  let baseId: string;

  beforeAll(async () => {
    t = await startTestServer({ env: fakeEnv() });
    k = new KnowledgeClient(t);
    baseId = (await k.createBase(uniqueName('long runs'))).id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('ingests two files of a million spaces then "x" (17 minutes each before), and another workspace\'s document meanwhile', async () => {
    const spaces = Buffer.from(`start ${' '.repeat(MILLION)}x\n`);
    const up = await k.uploadFiles(baseId, [{ name: 's1.txt', bytes: spaces }, { name: 's2.md', bytes: spaces }]);
    expect(up.status, up.text).toBe(200);
    const victim = await otherWorkspace(t);
    const victimBase = (await victim.createBase(uniqueName('victim'))).id;
    const small = await victim.uploadText(victimBase, 'small.md', '# Small\n\nA small document of another workspace.');
    await completedAt(victim, victimBase, small.id);
    const documents: { id: string }[] = up.body.data.documents;
    for (const doc of documents) {
      await completedAt(k, baseId, doc.id);
      const { chunks } = await k.chunks(baseId, doc.id);
      expect(chunks.map((c: { content: string }) => c.content.replace(/\s+/g, ' '))).toEqual(['start x']);
    }
  });

  it('ingests a PDF holding a word of 300,000 letters above a hyphenated line end (about 90 s of backtracking before)', async () => {
    const pdf = await makePdf([['a'.repeat(300_000), 'the man-', 'agement report']]);
    const up = await k.uploadFiles(baseId, [{ name: 'long-word.pdf', bytes: pdf }]);
    expect(up.status, up.text).toBe(200);
    const id: string = up.body.data.document.id;
    await completedAt(k, baseId, id);
    const text = (await k.chunks(baseId, id, '&limit=100')).chunks.map((c: { content: string }) => c.content).join('');
    expect(text).toContain('the management\nreport');
  });
});

describe('deleting a document whose ingest is running', () => {
  let t: TestServer;
  let k: KnowledgeClient;

  beforeAll(async () => {
    t = await startTestServer({ env: { ...fakeEnv(), WEFT_KNOWLEDGE_INGEST_WORKERS: '1' } });
    k = new KnowledgeClient(t);
  });
  afterAll(async () => {
    fake.hold = false;
    fake.releaseHeld();
    await t?.close();
  });

  it('stops its ingest at once (its embedding request is dropped) and the next document is ingested', async () => {
    const baseId = (await k.createBase(uniqueName('deleted'))).id;
    fake.hold = true;
    const requested = new Promise<void>((resolve) => {
      fake.onRequest = resolve;
    });
    const doomed = await k.uploadText(baseId, 'doomed.txt', 'A document deleted while its ingest runs.');
    await requested; // parsed, and waiting for its embeddings
    fake.onRequest = undefined;
    const abandonedBefore = fake.seen.abandoned;
    const deleted = await k.call('DELETE', `/api/v1/knowledge/${baseId}/documents/${doomed.id}?workspaceId=${k.workspaceId}`);
    expect(deleted.status, deleted.text).toBe(200);
    // Before, the ingest went on waiting for the provider (and a parse for its worker) until the deadline.
    await expect.poll(() => fake.seen.abandoned, { timeout: 10_000 }).toBe(abandonedBefore + 1);

    fake.hold = false;
    const next = await k.uploadText(baseId, 'next.txt', 'The document after the deleted one.');
    expect((await k.processed(baseId, next.id)).processingStatus).toBe('completed');
    expect((await k.document(baseId, doomed.id)).status).toBe(404);
  });
});

describe('the parse time limit, set by WEFT_KNOWLEDGE_PARSE_TIMEOUT_MS', () => {
  let t: TestServer;
  let k: KnowledgeClient;
  beforeAll(async () => {
    t = await startTestServer({ env: { ...fakeEnv(), WEFT_KNOWLEDGE_PARSE_TIMEOUT_MS: '1000' } });
    k = new KnowledgeClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('fails a document that reads longer than the limit, naming it, and reads the next one', async () => {
    const baseId = (await k.createBase(uniqueName('parse limit'))).id;
    // A PDF of 1,500 pages: seconds of parsing, far past one second on any host.
    const pages = Array.from({ length: 1500 }, (_, i) => [`Page ${i}: ${'words of a long report '.repeat(40)}`]);
    const up = await k.uploadFiles(baseId, [{ name: 'long.pdf', bytes: await makePdf(pages) }]);
    expect(up.status, up.text).toBe(200);
    const doc = await k.processed(baseId, up.body.data.document.id, 120_000);
    expect(doc.processingStatus).toBe('failed');
    expect(doc.processingError).toBe('Reading the document took longer than 1 s, the limit for one document (WEFT_KNOWLEDGE_PARSE_TIMEOUT_MS); it was stopped');
    const next = await k.uploadText(baseId, 'small.md', '# Small\n\nRead well inside the limit.');
    const after = await k.processed(baseId, next.id);
    expect(after.processingStatus, after.processingError).toBe('completed');
  });
});
