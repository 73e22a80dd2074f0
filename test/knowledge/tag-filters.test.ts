import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { KnowledgeClient, uniqueName } from './helpers.js';

// Typed tags as the reference has them (issue 28): a base names slots (text, number, date, boolean),
// documents carry values, and searches filter with typed operators; bad filters are refused with 400.

let t: TestServer;
let k: KnowledgeClient;
let baseId: string;
const ids: Record<string, string> = {};

const defineTag = (displayName: string, fieldType: string, extra: Record<string, unknown> = {}) =>
  k.call('POST', `/api/v1/knowledge/${baseId}/tag-definitions`, { workspaceId: k.workspaceId, displayName, fieldType, ...extra });

const names = (r: { body: any }) => [...new Set((r.body.data.results as { documentName: string }[]).map((h) => h.documentName))].sort();

beforeAll(async () => {
  t = await startTestServer();
  k = new KnowledgeClient(t);
  baseId = (await k.createBase(uniqueName('Tagged'))).id;
  for (const [name, type] of [['Department', 'text'], ['Priority', 'number'], ['Published', 'date'], ['Archived', 'boolean']]) {
    expect((await defineTag(name as string, type as string)).status).toBe(200);
  }
  const docs: [string, Record<string, unknown>][] = [
    ['sales.txt', { Department: 'Sales', Priority: 1, Published: '2024-01-15', Archived: false }],
    ['support.txt', { Department: 'Customer Support', Priority: 5, Published: '2024-06-30', Archived: true }],
    ['legal.txt', { Department: 'Legal', Priority: 3, Published: '2023-11-02' }],
  ];
  for (const [name, tagValues] of docs) {
    const doc = await k.uploadText(baseId, name, `Notes of the ${name.replace('.txt', '')} team about quarterly planning and budgets.`, { tagValues });
    expect(doc.tagValues).toEqual(tagValues);
    ids[name] = doc.id;
    expect((await k.processed(baseId, doc.id)).processingStatus).toBe('completed');
  }
});
afterAll(async () => {
  await t?.close();
});

describe('tag definitions', () => {
  it('lists the named slots, assigning the first free slot of each type', async () => {
    const r = await k.call('GET', `/api/v1/knowledge/${baseId}/tag-definitions?workspaceId=${k.workspaceId}`);
    expect(r.status).toBe(200);
    const slots = Object.fromEntries(r.body.data.tagDefinitions.map((d: any) => [d.displayName, `${d.tagSlot}/${d.fieldType}`]));
    expect(slots).toEqual({ Department: 'tag1/text', Priority: 'number1/number', Published: 'date1/date', Archived: 'boolean1/boolean' });
  });

  it('refuses a duplicate name (409), a slot of another type (400) and a fourth boolean slot (400)', async () => {
    expect((await defineTag('department', 'text')).status).toBe(409);
    expect((await defineTag('Owner', 'text', { tagSlot: 'number2' })).status).toBe(400);
    expect((await defineTag('Flag two', 'boolean')).status).toBe(200);
    expect((await defineTag('Flag three', 'boolean')).status).toBe(200);
    const fourth = await defineTag('Flag four', 'boolean');
    expect(fourth.status).toBe(400);
    expect(fourth.text).toContain('No free boolean tag slot');
  });
});

describe('tag filters', () => {
  const search = (tagFilters: unknown[], extra: Record<string, unknown> = {}) =>
    k.search({ knowledgeBaseIds: [baseId], query: 'planning budgets', tagFilters, ...extra });

  it('filters with each type\'s operators', async () => {
    expect(names(await search([{ tagName: 'Department', value: 'sales' }]))).toEqual(['sales.txt']);
    expect(names(await search([{ tagName: 'department', operator: 'contains', value: 'support' }]))).toEqual(['support.txt']);
    expect(names(await search([{ tagName: 'Department', operator: 'neq', value: 'Legal' }]))).toEqual(['sales.txt', 'support.txt']);
    expect(names(await search([{ tagName: 'Department', operator: 'starts_with', value: 'cust' }]))).toEqual(['support.txt']);
    expect(names(await search([{ tagName: 'Department', operator: 'ends_with', value: 'PORT' }]))).toEqual(['support.txt']);
    expect(names(await search([{ tagName: 'Department', operator: 'not_contains', value: 'AL' }]))).toEqual(['support.txt']);
    // Operands are literal text, not patterns.
    expect(names(await search([{ tagName: 'Department', operator: 'contains', value: 's.les' }]))).toEqual([]);
    expect(names(await search([{ tagName: 'Department', operator: 'starts_with', value: '.*' }]))).toEqual([]);
    expect(names(await search([{ tagName: 'Priority', operator: 'gte', value: 3 }]))).toEqual(['legal.txt', 'support.txt']);
    expect(names(await search([{ tagName: 'Priority', operator: 'between', value: 2, valueTo: 4 }]))).toEqual(['legal.txt']);
    expect(names(await search([{ tagName: 'Published', operator: 'lt', value: '2024-01-01' }]))).toEqual(['legal.txt']);
    expect(names(await search([{ tagName: 'Published', operator: 'between', value: '2024-01-15', valueTo: '2024-06-30' }]))).toEqual(['sales.txt', 'support.txt']);
    expect(names(await search([{ tagName: 'Archived', value: true }]))).toEqual(['support.txt']);
    // Several filters are ANDed.
    expect(names(await search([{ tagName: 'Priority', operator: 'gt', value: 0 }, { tagName: 'Archived', operator: 'eq', value: false }]))).toEqual(['sales.txt']);
  });

  it('puts the document\'s tags by display name into each hit\'s metadata, and searches by tags alone with similarity 1', async () => {
    const r = await k.search({ knowledgeBaseIds: [baseId], tagFilters: [{ tagName: 'Department', value: 'Legal' }] });
    expect(r.status).toBe(200);
    expect(r.body.data.query).toBe('');
    expect(r.body.data.results.length).toBe(1);
    expect(r.body.data.results[0]).toMatchObject({ documentName: 'legal.txt', similarity: 1 });
    expect(r.body.data.results[0].metadata).toMatchObject({ Department: 'Legal', Priority: 3, Published: '2023-11-02' });
  });

  it('refuses unknown tags, values of the wrong type, operators the type lacks, and tag filters over several bases', async () => {
    const unknown = await search([{ tagName: 'Colour', value: 'red' }]);
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('Unknown tag \\"Colour\\"');
    expect((await search([{ tagName: 'Priority', value: 'high' }])).status).toBe(400);
    expect((await search([{ tagName: 'Published', operator: 'gt', value: '2024-13-45' }])).status).toBe(400);
    const op = await search([{ tagName: 'Archived', operator: 'gt', value: true }]);
    expect(op.status).toBe(400);
    expect(op.text).toContain('not valid for boolean tag');
    expect((await search([{ tagName: 'Department', operator: 'between', value: 'a', valueTo: 'b' }])).status).toBe(400);
    expect((await search([{ tagName: 'Priority', operator: 'between', value: 1 }])).status).toBe(400);
    expect((await search([{ tagName: 'Priority', operator: 'approximately', value: 1 }])).status).toBe(400);
    const long = await search([{ tagName: 'Department', operator: 'contains', value: 'x'.repeat(257) }]);
    expect(long.status).toBe(400);
    expect(long.text).toContain('contains takes at most 256 characters');
    expect((await search([{ tagName: 'Department', operator: 'ends_with', value: 'x'.repeat(256) }])).status).toBe(200);
    const second = (await k.createBase(uniqueName('Other'))).id;
    const multi = await k.search({ knowledgeBaseIds: [baseId, second], query: 'x', tagFilters: [{ tagName: 'Department', value: 'Sales' }] });
    expect(multi.status).toBe(400);
    expect(multi.text).toContain('only supported when searching a single knowledge base');
  });

  it('keeps the equality filters working beside tag filters', async () => {
    const doc = await k.uploadText(baseId, 'plain.txt', 'Quarterly planning notes without typed tags.', { tags: { team: 'ops' } });
    await k.processed(baseId, doc.id);
    expect(names(await search([], { filters: { team: 'ops' } }))).toEqual(['plain.txt']);
  });
});

describe('document tag values', () => {
  it('sets and clears values with PATCH, refusing unknown names and wrong types without writing anything', async () => {
    const path = `/api/v1/knowledge/${baseId}/documents/${ids['legal.txt']}`;
    const bad = await k.call('PATCH', path, { workspaceId: k.workspaceId, tagValues: { Priority: 'urgent' }, enabled: false });
    expect(bad.status).toBe(400);
    const unchanged = await k.document(baseId, ids['legal.txt'] as string);
    expect(unchanged.body.data.document).toMatchObject({ enabled: true, tagValues: { Priority: 3 } });

    const ok = await k.call('PATCH', path, { workspaceId: k.workspaceId, tagValues: { Priority: 4, Published: null } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.document.tagValues).toEqual({ Department: 'Legal', Priority: 4 });
  });

  it('refuses an upload whose tag values do not fit the definitions, storing no document', async () => {
    const before = (await k.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${k.workspaceId}`)).body.data.pagination.total;
    const r = await k.call('POST', `/api/v1/knowledge/${baseId}/documents`, {
      workspaceId: k.workspaceId, filename: 'x.txt', content: 'x', tagValues: { Archived: 'maybe' },
    });
    expect(r.status).toBe(400);
    const multipart = await k.uploadFiles(baseId, [{ name: 'y.txt', bytes: new TextEncoder().encode('y') }], { tagValues: '{"Nope": 1}' });
    expect(multipart.status).toBe(400);
    const after = (await k.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${k.workspaceId}`)).body.data.pagination.total;
    expect(after).toBe(before);
  });

  it('deleting a definition clears its slot on the documents', async () => {
    const list = await k.call('GET', `/api/v1/knowledge/${baseId}/tag-definitions?workspaceId=${k.workspaceId}`);
    const archived = list.body.data.tagDefinitions.find((d: any) => d.displayName === 'Archived');
    const del = await k.call('DELETE', `/api/v1/knowledge/${baseId}/tag-definitions/${archived.id}?workspaceId=${k.workspaceId}`);
    expect(del.status).toBe(200);
    const doc = await k.document(baseId, ids['support.txt'] as string);
    expect(doc.body.data.document.tagValues).not.toHaveProperty('Archived');
    expect((await k.call('DELETE', `/api/v1/knowledge/${baseId}/tag-definitions/${archived.id}?workspaceId=${k.workspaceId}`)).status).toBe(404);
  });
});
