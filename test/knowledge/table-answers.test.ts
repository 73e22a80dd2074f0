// Questions answered by one row of a table, asked through the API in the default search mode against real
// documents nobody on the team wrote (bench/knowledge-corpus: Debian's and Ubuntu's release tables, and
// prose documents that compete for the same words). Before the hybrid search and the passage rerank, both
// tables ranked outside the top 10 for these questions (issue 28).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { KnowledgeClient, uniqueName } from './helpers.js';

const corpus = path.resolve(import.meta.dirname, '../../bench/knowledge-corpus');
const files = ['debian.csv', 'ubuntu.csv', 'socat-faq.txt', 'base-passwd-readme.txt', 'croner-readme.md'];

let t: TestServer;
let k: KnowledgeClient;
let baseId: string;

beforeAll(async () => {
  t = await startTestServer();
  k = new KnowledgeClient(t);
  baseId = (await k.createBase(uniqueName('releases'))).id;
  const uploaded = await k.uploadFiles(baseId, files.map((name) => ({
    name, type: name.endsWith('.csv') ? 'text/csv' : name.endsWith('.md') ? 'text/markdown' : 'text/plain',
    bytes: fs.readFileSync(path.join(corpus, name)),
  })));
  expect(uploaded.status, uploaded.text).toBe(200);
  for (const d of uploaded.body.data.documents as { id: string }[]) {
    expect((await k.processed(baseId, d.id, 120_000)).processingStatus).toBe('completed');
  }
}, 180_000);
afterAll(async () => {
  await t?.close();
});

describe('a question answered by a table row', () => {
  it.each([
    ['When was Debian bookworm released?', 'debian.csv', '2023-06-10'],
    ['When was Ubuntu 22.04 Jammy Jellyfish released?', 'ubuntu.csv', '2022-04-21'],
  ])('"%s" finds the row of %s first, holding the answer', async (query, document, answer) => {
    const r = await k.search({ knowledgeBaseIds: [baseId], query, topK: 5 });
    expect(r.status, r.text).toBe(200);
    const [first] = r.body.data.results as { documentName: string; content: string }[];
    expect(first.documentName).toBe(document);
    expect(first.content).toContain(answer);
  });
});
