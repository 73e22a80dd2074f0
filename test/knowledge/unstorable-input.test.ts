import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';
import { type FakeEmbeddings, KnowledgeClient, startFakeEmbeddings, uniqueName } from './helpers.js';

// Knowledge inputs PostgreSQL cannot store or compare answer 400, never 500, and write nothing: date tags of
// year 0 (PostgreSQL has no year 0, and Date.UTC read years 0 to 99 as 1900 to 1999), and NUL characters or
// unpaired surrogates in the parts of a request the JSON body parser never sees (multipart fields holding
// JSON, query strings) or that a workflow's knowledge block hands over.

let t: TestServer;
let fake: FakeEmbeddings;
let k: KnowledgeClient;
let baseId: string;
let goodId: string;

const dateSearch = (value: string, operator = 'gt') =>
  k.search({ knowledgeBaseIds: [baseId], tagFilters: [{ tagName: 'Due', operator, value }] });
const documents = async (): Promise<{ filename: string; tagValues: Record<string, unknown> }[]> =>
  (await k.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${k.workspaceId}&limit=100`)).body.data.documents;

beforeAll(async () => {
  fake = await startFakeEmbeddings();
  t = await startTestServer({ env: { EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64' } });
  k = new KnowledgeClient(t);
  baseId = (await k.createBase(uniqueName('Checked input'))).id;
  for (const [displayName, fieldType] of [['Due', 'date'], ['Owner', 'text']]) {
    const r = await k.call('POST', `/api/v1/knowledge/${baseId}/tag-definitions`, { workspaceId: k.workspaceId, displayName, fieldType });
    expect(r.status, r.text).toBe(200);
  }
  const good = await k.uploadText(baseId, 'good.txt', 'A normal document about invoices.', { tagValues: { Due: '2024-06-01', Owner: 'Ana' } });
  goodId = good.id;
  expect((await k.processed(baseId, goodId)).processingStatus).toBe('completed');
});
afterAll(async () => {
  await t?.close();
  fake?.close();
});

describe('date tags', () => {
  it('refuses year 0 in values and filter operands with 400, and date-filtered searches keep working', async () => {
    const refused = (r: { status: number; body: any; text: string }, value: string) => {
      expect(r.status, r.text).toBe(400);
      expect(r.body.error).toContain('Tag "Due" is a date tag');
      expect(r.body.error).toContain(value);
    };
    refused(await k.call('POST', `/api/v1/knowledge/${baseId}/documents`, {
      workspaceId: k.workspaceId, filename: 'y0.txt', content: 'Year zero.', tagValues: { Due: '0000-01-01' },
    }), '0000-01-01');
    const form = new FormData();
    form.set('workspaceId', k.workspaceId);
    form.set('tagValues', JSON.stringify({ Due: '0000-06-15T10:00:00Z' }));
    form.append('file', new Blob(['Year zero.']), 'y0-form.txt');
    refused(await k.rawUpload(baseId, form), '0000-06-15');
    refused(await k.call('PATCH', `/api/v1/knowledge/${baseId}/documents/${goodId}`, { workspaceId: k.workspaceId, tagValues: { Due: '0000-02-29' } }), '0000-02-29');
    refused(await dateSearch('0000-01-01'), '0000-01-01');
    refused(await k.search({ knowledgeBaseIds: [baseId], tagFilters: [{ tagName: 'Due', operator: 'between', value: '2020-01-01', valueTo: '0000-12-31' }] }), '0000-12-31');
    expect((await documents()).map((d) => d.filename)).toEqual(['good.txt']);

    // Years 1 to 99 are dates of their own (not 1901 to 1999), leap years included.
    const early = await k.uploadText(baseId, 'early.txt', 'An early record of invoices.', { tagValues: { Due: '0004-02-29' } });
    expect(early.tagValues).toEqual({ Due: '0004-02-29' });
    expect((await k.processed(baseId, early.id)).processingStatus).toBe('completed');
    const before1900 = await dateSearch('0100-01-01', 'lt');
    expect(before1900.status, before1900.text).toBe(200);
    expect(before1900.body.data.results.map((r: { documentId: string }) => r.documentId)).toEqual([early.id]);
    const later = await dateSearch('2020-01-01');
    expect(later.status, later.text).toBe(200);
    expect(later.body.data.results.map((r: { documentId: string }) => r.documentId)).toEqual([goodId]);
    const deleted = await k.call('DELETE', `/api/v1/knowledge/${baseId}/documents/${early.id}?workspaceId=${k.workspaceId}`);
    expect(deleted.status).toBe(200);
  });

  it('migration 0032 drops year-0 values an earlier version stored, so that date-filtered searches answer again', async () => {
    const db = t.server.ctx.db;
    const old = await k.uploadText(baseId, 'old.txt', 'A document of an earlier version.', { tagValues: { Owner: 'Bo' } });
    expect((await k.processed(baseId, old.id)).processingStatus).toBe('completed');
    // As the earlier version stored it: the slot of Due (date1) holding year 0.
    await db.query(`UPDATE knowledge_documents SET tag_slots = tag_slots || '{"date1": "0000-01-01"}'::jsonb WHERE id = $1`, [old.id]);
    const sql = fs.readFileSync(new URL('../../src/db/migrations/0032_knowledge_date_year_zero.sql', import.meta.url), 'utf8');
    await db.exec(sql);
    const search = await dateSearch('2020-01-01');
    expect(search.status, search.text).toBe(200);
    const byName = Object.fromEntries((await documents()).map((d) => [d.filename, d.tagValues]));
    expect(byName['old.txt']).toEqual({ Owner: 'Bo' });
    expect(byName['good.txt']).toEqual({ Due: '2024-06-01', Owner: 'Ana' });
    await k.call('DELETE', `/api/v1/knowledge/${baseId}/documents/${old.id}?workspaceId=${k.workspaceId}`);
  });
});

describe('text the databases cannot store', () => {
  it('refuses NUL and unpaired surrogates in multipart fields with 400 naming the field, writing nothing', async () => {
    const upload = (fields: Record<string, string>) => {
      const form = new FormData();
      form.set('workspaceId', k.workspaceId);
      for (const [name, value] of Object.entries(fields)) form.set(name, value);
      form.append('file', new Blob(['hello']), 'a.txt');
      return k.rawUpload(baseId, form);
    };
    const cases: [Record<string, string>, string][] = [
      [{ tags: '{"a":"x\\u0000y"}' }, 'tags'],
      [{ tags: '{"a\\u0000":"x"}' }, 'tags'],
      [{ tags: '{"a\\ud800":"x"}' }, 'tags'],
      [{ tags: '{"a":"\\udc00"}' }, 'tags'],
      [{ tagValues: '{"Owner":"x\\u0000y"}' }, 'tagValues'],
      [{ tagValues: '{"Owner\\ud800":"x"}' }, 'tagValues'],
      [{ sourceUrl: 'https://example.com/a\u0000b' }, 'sourceUrl'],
    ];
    for (const [fields, name] of cases) {
      const r = await upload(fields);
      expect(r.status, `${JSON.stringify(fields)}: ${r.text}`).toBe(400);
      expect(r.body.error).toBe(`${name} holds a NUL character (\\u0000) or an unpaired surrogate, which cannot be stored`);
    }
    expect((await documents()).map((d) => d.filename)).toEqual(['good.txt']);
    // A surrogate pair is a character like any other.
    const pair = await upload({ tags: '{"emoji":"\\ud83d\\ude00"}' });
    expect(pair.status, pair.text).toBe(200);
    expect(pair.body.data.document.tags).toEqual({ emoji: '\u{1F600}' });
    await k.call('DELETE', `/api/v1/knowledge/${baseId}/documents/${pair.body.data.document.id}?workspaceId=${k.workspaceId}`);
  });

  it('refuses a NUL in the document list\'s search with 400', async () => {
    const r = await k.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${k.workspaceId}&search=a%00b`);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toBe('search: must not contain a NUL character (%00)');
    const ok = await k.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${k.workspaceId}&search=goo`);
    expect(ok.body.data.documents.map((d: { filename: string }) => d.filename)).toEqual(['good.txt']);
  });

  it('a knowledge block whose filters hold a NUL fails with a clear error', async () => {
    // The definition holds the JSON text `{"Owner":"x\u0000y"}`: the block parses it at run time.
    const id = await deploy(t, uniqueName('kb-nul'), {
      blocks: [start(), { id: 'kb', type: 'knowledge', name: 'Search', config: { query: 'invoices', knowledgeBaseIds: [baseId], filters: '{"Owner":"x\\u0000y"}' } }],
      edges: [{ from: 'start', to: 'kb' }],
    });
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.body.success, r.text).toBe(false);
    expect(r.body.error).toContain('The search holds a NUL character (\\u0000) or an unpaired surrogate');
  });
});
