import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, start } from '../support/workflows.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { makeDocx, makePdf, makeXlsx } from './files.js';
import { presentationPptx } from './hostile-files.js';
import { KnowledgeClient, otherWorkspace, uniqueName } from './helpers.js';

// The knowledge API end to end on the local embedder: bases, uploads of every supported type, the
// ingest lifecycle, chunks, search (ordering, several bases, filters, disabled documents) and the block.

let t: TestServer;
let k: KnowledgeClient;
let other: KnowledgeClient;
/** A team workspace whose plan stores at most 3,000 bytes. */
let small: KnowledgeClient;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_PLAN_LIMITS: JSON.stringify({ team: { storageBytes: 3000 } }) } });
  k = new KnowledgeClient(t);
  other = await otherWorkspace(t, 'free');
  small = await otherWorkspace(t, 'team');
});
afterAll(async () => {
  await t?.close();
});

const corpus: Record<string, string> = {
  'password.md': '# Resetting your password\n\nIf you forgot your password, open the sign-in page and click "Forgot password". We email you a link to choose a new password. The link expires after one hour.',
  'billing.md': '# Invoices and billing\n\nInvoices are issued on the first day of each month. Download past invoices as PDF from the billing settings, and update the credit card we charge.',
  'vacation.md': '# Vacation policy\n\nEmployees receive 25 days of paid leave per year. Requests for time off must be approved by your manager two weeks in advance.',
  'deploy.md': '# Deploying the server\n\nBuild the container image, push it to the registry and roll it out to the cluster. Health checks must pass before traffic is switched over.',
  'bread.md': '# Baking bread\n\nMix flour, water, salt and yeast, let the dough rise overnight, then bake it in a hot oven for forty minutes until the crust is brown.',
};

describe('knowledge bases', () => {
  it('creates a base with the documented shape and defaults, lists, gets, updates and deletes it', async () => {
    const name = uniqueName('Handbook');
    const r = await k.call('POST', '/api/v1/knowledge', { workspaceId: k.workspaceId, name, description: 'Company handbook' });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data.message).toBe('Knowledge base created successfully');
    const kb = r.body.data.knowledgeBase;
    expect(kb.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(kb).toMatchObject({
      name, description: 'Company handbook', docCount: 0, tokenCount: 0, embeddingModel: 'weft-local/use-lite-512', embeddingDimension: 512,
      chunkingConfig: { maxSize: 1024, minSize: 100, overlap: 200 },
    });
    expect(Date.parse(kb.createdAt)).not.toBeNaN();

    const list = await k.call('GET', `/api/v1/knowledge?workspaceId=${k.workspaceId}`);
    expect(list.status).toBe(200);
    expect(list.body.data.knowledgeBases.map((b: { id: string }) => b.id)).toContain(kb.id);
    expect(list.body.data.totalCount).toBe(list.body.data.knowledgeBases.length);

    const got = await k.call('GET', `/api/v1/knowledge/${kb.id}?workspaceId=${k.workspaceId}`);
    expect(got.body.data.knowledgeBase).toEqual(kb);

    const put = await k.call('PUT', `/api/v1/knowledge/${kb.id}`, {
      workspaceId: k.workspaceId, name: `${name} v2`, chunkingConfig: { maxSize: 300, minSize: 50, overlap: 20 },
    });
    expect(put.status).toBe(200);
    expect(put.body.data.message).toBe('Knowledge base updated successfully');
    expect(put.body.data.knowledgeBase).toMatchObject({ name: `${name} v2`, description: 'Company handbook', chunkingConfig: { maxSize: 300, minSize: 50, overlap: 20 } });

    const del = await k.call('DELETE', `/api/v1/knowledge/${kb.id}?workspaceId=${k.workspaceId}`);
    expect(del.status).toBe(200);
    expect(del.body.data.message).toBe('Knowledge base deleted successfully');
    expect((await k.call('GET', `/api/v1/knowledge/${kb.id}?workspaceId=${k.workspaceId}`)).status).toBe(404);
  });

  it('refuses duplicate names, bad chunking bounds and empty updates, writing nothing', async () => {
    const name = uniqueName('Dup');
    await k.createBase(name);
    const dup = await k.call('POST', '/api/v1/knowledge', { workspaceId: k.workspaceId, name });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toContain('already exists');
    // The same name in another workspace is fine.
    expect((await other.call('POST', '/api/v1/knowledge', { workspaceId: other.workspaceId, name })).status).toBe(200);

    for (const [field, value] of [['maxSize', 99], ['maxSize', 4001], ['minSize', 0], ['minSize', 2001], ['overlap', -1], ['overlap', 501], ['maxSize', 512.5]] as const) {
      const r = await k.call('POST', '/api/v1/knowledge', { workspaceId: k.workspaceId, name: uniqueName('Bad'), chunkingConfig: { [field]: value } });
      expect(r.status, `${field}=${value}`).toBe(400);
      expect(r.body.error).toContain(field);
    }
    const wrongType = await k.call('POST', '/api/v1/knowledge', { workspaceId: k.workspaceId, name: 42 });
    expect(wrongType.status).toBe(400);
    const before = (await k.call('GET', `/api/v1/knowledge?workspaceId=${k.workspaceId}`)).body.data.totalCount;

    const kb = await k.createBase(uniqueName('Upd'));
    const none = await k.call('PUT', `/api/v1/knowledge/${kb.id}`, { workspaceId: k.workspaceId });
    expect(none.status).toBe(400);
    expect(none.body.error).toContain('At least one of name, description, or chunkingConfig');
    const clash = await k.call('PUT', `/api/v1/knowledge/${kb.id}`, { workspaceId: k.workspaceId, name });
    expect(clash.status).toBe(409);
    expect((await k.call('GET', `/api/v1/knowledge?workspaceId=${k.workspaceId}`)).body.data.totalCount).toBe(before + 1);
  });

  it('answers 404 for unknown, malformed and foreign ids, and another workspace never sees a base', async () => {
    const kb = await k.createBase(uniqueName('Private'));
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      expect((await k.call('GET', `/api/v1/knowledge/${id}?workspaceId=${k.workspaceId}`)).status).toBe(404);
    }
    // The other workspace's key, naming its own workspace: the base is not there.
    const foreign = await other.call('GET', `/api/v1/knowledge/${kb.id}?workspaceId=${other.workspaceId}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('Knowledge base not found');
    expect((await other.call('DELETE', `/api/v1/knowledge/${kb.id}?workspaceId=${other.workspaceId}`)).status).toBe(404);
    expect((await other.call('PUT', `/api/v1/knowledge/${kb.id}`, { workspaceId: other.workspaceId, name: 'x' })).status).toBe(404);
    // The other workspace's key naming this workspace: refused.
    expect([403, 404]).toContain((await other.call('GET', `/api/v1/knowledge/${kb.id}?workspaceId=${k.workspaceId}`)).status);
    expect((await k.call('GET', `/api/v1/knowledge/${kb.id}?workspaceId=${k.workspaceId}`)).status).toBe(200);
    expect((await k.call('GET', `/api/v1/knowledge/${kb.id}`)).status).toBe(400);
    expect((await request401()).status).toBe(401);
  });
});

async function request401() {
  return k.call('GET', `/api/v1/knowledge?workspaceId=${k.workspaceId}`, undefined, { 'x-api-key': 'sk-weft-not-a-key' });
}

describe('documents', () => {
  it('uploads text as JSON, answers pending at once, then completes with exact counts and chunks', async () => {
    const kb = await k.createBase(uniqueName('Docs'), { chunkingConfig: { maxSize: 100, minSize: 20, overlap: 10 } });
    const sections = Array.from({ length: 6 }, (_, i) => `## Section ${i + 1}\n\n${`Sentence ${i + 1} explains part of the topic in plain words. `.repeat(8)}`);
    const content = `# Guide\n\n${sections.join('\n\n')}`;
    const r = await k.call('POST', `/api/v1/knowledge/${kb.id}/documents`, { workspaceId: k.workspaceId, filename: 'guide.md', content, tags: { team: 'docs' } });
    expect(r.status).toBe(200);
    expect(r.body.data.message).toContain('Processing will begin shortly');
    const pending = r.body.data.document;
    expect(pending).toMatchObject({
      knowledgeBaseId: kb.id, filename: 'guide.md', fileSize: Buffer.byteLength(content), mimeType: 'text/markdown',
      processingStatus: 'pending', chunkCount: 0, tokenCount: 0, characterCount: 0, enabled: true, tags: { team: 'docs' },
    });

    const done = await k.processed(kb.id, pending.id);
    expect(done.processingStatus).toBe('completed');
    expect(done.processingError).toBeNull();
    expect(done.chunkCount).toBeGreaterThan(3);
    expect(done.characterCount).toBeGreaterThan(content.length * 0.8);
    expect(Date.parse(done.processingCompletedAt)).toBeGreaterThanOrEqual(Date.parse(done.processingStartedAt));

    const { chunks, pagination } = await k.chunks(kb.id, pending.id, '&limit=100');
    expect(pagination).toMatchObject({ total: done.chunkCount, offset: 0, hasMore: false });
    expect(chunks.map((c: { chunkIndex: number }) => c.chunkIndex)).toEqual([...Array(done.chunkCount).keys()]);
    expect(chunks.reduce((n: number, c: { tokenCount: number }) => n + c.tokenCount, 0)).toBe(done.tokenCount);
    for (const c of chunks) {
      expect(c.tokenCount).toBeLessThanOrEqual(100);
      expect(c.content.length).toBeGreaterThan(0);
    }
    expect(chunks.some((c: { metadata: { headings?: string[] } }) => c.metadata.headings?.includes('Section 3'))).toBe(true);
    const page2 = await k.chunks(kb.id, pending.id, '&limit=2&offset=2');
    expect(page2.chunks.map((c: { chunkIndex: number }) => c.chunkIndex)).toEqual([2, 3]);

    const base = (await k.call('GET', `/api/v1/knowledge/${kb.id}?workspaceId=${k.workspaceId}`)).body.data.knowledgeBase;
    expect(base).toMatchObject({ docCount: 1, tokenCount: done.tokenCount });
  });

  it('ingests PDF, DOCX, xlsx, PPTX, CSV, HTML, JSON and YAML sent as multipart, keeping where each chunk came from', async () => {
    const kb = await k.createBase(uniqueName('Formats'));
    const pdf = await makePdf([['Solar panels convert sunlight into electricity.'], ['Wind turbines turn moving air into power.']]);
    const docx = await makeDocx([{ heading: 'Onboarding', paragraphs: ['New hires receive a laptop on their first day.'] }]);
    const xlsx = await makeXlsx(['city', 'population'], [['Lyon', 522000], ['Nantes', 320000]]);
    const files = [
      { name: 'energy.pdf', type: 'application/pdf', bytes: pdf },
      { name: 'onboarding.docx', bytes: docx },
      { name: 'cities.xlsx', bytes: xlsx },
      { name: 'roadmap.pptx', bytes: presentationPptx([{ paragraphs: ['Roadmap'] }, { paragraphs: ['Ship the mobile app in March'], notes: ['Ask about the budget'] }]) },
      { name: 'prices.csv', type: 'text/csv', bytes: Buffer.from('item,price\napple,1.20\npear,0.90\n') },
      { name: 'page.html', type: 'text/html', bytes: Buffer.from('<html><head><script>var secret = 1;</script></head><body><h1>Welcome</h1><p>Opening hours are nine to five.</p></body></html>') },
      { name: 'config.json', bytes: Buffer.from(JSON.stringify({ server: { port: 8080, host: 'example.org' } })) },
      { name: 'settings.yaml', bytes: Buffer.from('retries: 3\ntimeout: 30s\n') },
    ];
    const r = await k.uploadFiles(kb.id, files, { tags: JSON.stringify({ batch: 'formats' }) });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.documents).toHaveLength(files.length);
    const byName = new Map<string, any>();
    for (const d of r.body.data.documents) {
      expect(d.processingStatus).toBe('pending');
      expect(d.tags).toEqual({ batch: 'formats' });
      const done = await k.processed(kb.id, d.id);
      expect(done.processingStatus, `${d.filename}: ${done.processingError}`).toBe('completed');
      byName.set(d.filename, { ...done, chunks: (await k.chunks(kb.id, d.id)).chunks });
    }
    expect(byName.get('energy.pdf').mimeType).toBe('application/pdf');
    expect(byName.get('energy.pdf').fileSize).toBe(pdf.length);
    const pdfText = byName.get('energy.pdf').chunks.map((c: { content: string }) => c.content).join(' ');
    expect(pdfText).toContain('Solar panels');
    expect(pdfText).toContain('Wind turbines');
    expect(JSON.stringify(byName.get('energy.pdf').chunks.map((c: { metadata: unknown }) => c.metadata))).toMatch(/"page|"pages/);
    expect(byName.get('onboarding.docx').chunks[0].content).toContain('laptop');
    expect(byName.get('cities.xlsx').chunks[0].content).toContain('Lyon');
    expect(byName.get('cities.xlsx').chunks[0].content).toContain('population');
    const slides = byName.get('roadmap.pptx');
    expect(slides.mimeType).toBe('application/vnd.openxmlformats-officedocument.presentationml.presentation');
    expect(slides.chunks.map((c: { content: string }) => c.content).join(' ')).toMatch(/Slide 2[\s\S]*mobile app[\s\S]*Notes: Ask about the budget/);
    expect(byName.get('prices.csv').chunks[0].content).toContain('item');
    expect(byName.get('prices.csv').chunks[0].metadata.rows).toBeDefined();
    expect(byName.get('page.html').chunks.map((c: { content: string }) => c.content).join(' ')).not.toContain('secret');
    expect(byName.get('config.json').chunks[0].content).toContain('8080');
    expect(byName.get('settings.yaml').chunks[0].content).toContain('retries');
  });

  it('marks an unreadable PDF and an empty document failed, with the reason', async () => {
    const kb = await k.createBase(uniqueName('Broken'));
    const r = await k.uploadFiles(kb.id, [
      { name: 'broken.pdf', type: 'application/pdf', bytes: Buffer.from('%PDF-1.7\nthis is not really a pdf') },
      { name: 'empty.txt', bytes: Buffer.from('   \n\n  ') },
      { name: 'latin1.txt', bytes: Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0xff, 0xfe, 0x41]) },
    ]);
    expect(r.status, r.text).toBe(200);
    const [pdf, empty, latin1] = await Promise.all(r.body.data.documents.map((d: { id: string }) => k.processed(kb.id, d.id)));
    expect(pdf.processingStatus).toBe('failed');
    expect(pdf.processingError).toMatch(/PDF/i);
    expect(empty.processingStatus).toBe('failed');
    expect(empty.processingError).toMatch(/no text/i);
    expect(latin1.processingStatus).toBe('failed');
    expect(latin1.processingError).toMatch(/UTF-8/);
    expect(pdf.chunkCount).toBe(0);
  });

  it('refuses unsupported types (415), missing fields (400) and a full storage (403), writing nothing', async () => {
    const kb = await k.createBase(uniqueName('Refusals'));
    const exe = await k.uploadFiles(kb.id, [{ name: 'tool.exe', bytes: Buffer.from('MZ') }]);
    expect(exe.status).toBe(415);
    expect(exe.body.error).toContain('pdf');
    expect(exe.body.error).toContain('docx');
    const mismatch = await k.uploadFiles(kb.id, [{ name: 'photo.pdf', type: 'image/png', bytes: Buffer.from('x') }]);
    expect(mismatch.status).toBe(415);
    const jsonExe = await k.call('POST', `/api/v1/knowledge/${kb.id}/documents`, { workspaceId: k.workspaceId, filename: 'a.exe', content: 'x' });
    expect(jsonExe.status).toBe(415);

    const noWs = new FormData();
    noWs.append('file', new Blob(['hello']), 'a.txt');
    const r1 = await k.rawUpload(kb.id, noWs);
    expect(r1.status).toBe(400);
    expect(r1.body.error).toContain('workspaceId');
    const noFile = new FormData();
    noFile.set('workspaceId', k.workspaceId);
    const r2 = await k.rawUpload(kb.id, noFile);
    expect(r2.status).toBe(400);
    expect(r2.body.error).toContain('file');
    const both = await k.call('POST', `/api/v1/knowledge/${kb.id}/documents`, { workspaceId: k.workspaceId, filename: 'a.txt', content: 'x', contentBase64: 'eA==' });
    expect(both.status).toBe(400);
    const badB64 = await k.call('POST', `/api/v1/knowledge/${kb.id}/documents`, { workspaceId: k.workspaceId, filename: 'a.txt', contentBase64: '***' });
    expect(badB64.status).toBe(400);
    const badUrl = await k.uploadFiles(kb.id, [{ name: 'a.txt', bytes: Buffer.from('hello') }], { sourceUrl: 'not a url' });
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.error).toContain('sourceUrl');
    const badTags = await k.uploadFiles(kb.id, [{ name: 'a.txt', bytes: Buffer.from('hello') }], { tags: '{"x":' });
    expect(badTags.status).toBe(400);
    const unknownBase = await k.uploadText('00000000-0000-4000-8000-000000000000', 'a.txt', 'hello').catch((e: Error) => e.message);
    expect(unknownBase).toContain('404');
    const foreignBase = await other.call('POST', `/api/v1/knowledge/${kb.id}/documents`, { workspaceId: other.workspaceId, filename: 'a.txt', content: 'x' });
    expect(foreignBase.status).toBe(404);

    const smallBase = await small.createBase(uniqueName('Small'));
    const fits = await small.call('POST', `/api/v1/knowledge/${smallBase.id}/documents`, { workspaceId: small.workspaceId, filename: 'a.txt', content: 'a'.repeat(2000) });
    expect(fits.status).toBe(200);
    const full = await small.call('POST', `/api/v1/knowledge/${smallBase.id}/documents`, { workspaceId: small.workspaceId, filename: 'b.txt', content: 'b'.repeat(2000) });
    expect(full.status).toBe(403);
    expect(full.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
    const listed = await small.call('GET', `/api/v1/knowledge/${smallBase.id}/documents?workspaceId=${small.workspaceId}`);
    expect(listed.body.data.documents.map((d: { filename: string }) => d.filename)).toEqual(['a.txt']);

    const docs = await k.call('GET', `/api/v1/knowledge/${kb.id}/documents?workspaceId=${k.workspaceId}`);
    expect(docs.body.data.pagination.total).toBe(0);
  });

  it('the storage limit counts every area together: rows in a table leave a document that alone would fit no room', async () => {
    const ws = await otherWorkspace(t, 'team'); // 3,000 bytes of storage
    const table = await ws.call('POST', '/api/v1/tables', { workspaceId: ws.workspaceId, name: 'notes', schema: { columns: [{ name: 'text', type: 'string' }] } });
    expect(table.status).toBe(200);
    const tableId = table.body.data.table.id as string;
    const row = await ws.call('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: ws.workspaceId, data: { text: 'r'.repeat(2000) } });
    expect(row.status).toBe(200);
    const base = await ws.createBase(uniqueName('Shared storage'));
    const doc = await ws.call('POST', `/api/v1/knowledge/${base.id}/documents`, { workspaceId: ws.workspaceId, filename: 'c.txt', content: 'c'.repeat(1500) });
    expect(doc.status).toBe(403);
    expect(doc.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
    // And the other way round: a small document, then a row that would fit alone.
    const room = await ws.call('POST', `/api/v1/knowledge/${base.id}/documents`, { workspaceId: ws.workspaceId, filename: 'd.txt', content: 'd'.repeat(700) });
    expect(room.status).toBe(200);
    const second = await ws.call('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: ws.workspaceId, data: { text: 's'.repeat(500) } });
    expect(second.status).toBe(403);
    expect(second.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
    const rows = await ws.call('GET', `/api/v1/tables/${tableId}/rows?workspaceId=${ws.workspaceId}`);
    expect(rows.body.data.rows).toHaveLength(1);
  });

  it('lists with pagination, filename search, enabled filter and sort; disables and deletes', async () => {
    const kb = await k.createBase(uniqueName('Listing'));
    const names = ['alpha.txt', 'beta.txt', 'gamma.md', 'alphabet.txt'];
    const ids: string[] = [];
    for (const n of names) ids.push((await k.uploadText(kb.id, n, `${n} body text that says something about ${n}`)).id);
    for (const id of ids) await k.processed(kb.id, id);
    const list = (q: string) => k.call('GET', `/api/v1/knowledge/${kb.id}/documents?workspaceId=${k.workspaceId}${q}`);

    const first = await list('&limit=2&sortBy=filename&sortOrder=asc');
    expect(first.body.data.documents.map((d: { filename: string }) => d.filename)).toEqual(['alpha.txt', 'alphabet.txt']);
    expect(first.body.data.pagination).toEqual({ total: 4, limit: 2, offset: 0, hasMore: true });
    const second = await list('&limit=2&offset=2&sortBy=filename&sortOrder=asc');
    expect(second.body.data.documents.map((d: { filename: string }) => d.filename)).toEqual(['beta.txt', 'gamma.md']);
    expect(second.body.data.pagination.hasMore).toBe(false);
    const newest = await list('');
    expect(newest.body.data.documents[0].filename).toBe('alphabet.txt');
    expect((await list('&search=ALPHA')).body.data.pagination.total).toBe(2);
    expect((await list('&search=a.pha')).body.data.pagination.total).toBe(0);
    expect((await list('&search=BET.TXT')).body.data.pagination.total).toBe(1);

    const patched = await k.call('PATCH', `/api/v1/knowledge/${kb.id}/documents/${ids[1]}`, { workspaceId: k.workspaceId, enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.body.data.document.enabled).toBe(false);
    expect((await list('&enabledFilter=disabled')).body.data.documents.map((d: { id: string }) => d.id)).toEqual([ids[1]]);
    expect((await list('&enabledFilter=enabled')).body.data.pagination.total).toBe(3);

    for (const bad of ['&limit=0', '&limit=101', '&offset=-1', '&sortBy=size', '&enabledFilter=some', '&limit=abc']) {
      const r = await list(bad);
      expect(r.status, bad).toBe(400);
    }
    expect((await k.call('PATCH', `/api/v1/knowledge/${kb.id}/documents/${ids[1]}`, { workspaceId: k.workspaceId })).status).toBe(400);
    expect((await k.call('PATCH', `/api/v1/knowledge/${kb.id}/documents/${ids[1]}`, { workspaceId: k.workspaceId, enabled: 'no' })).status).toBe(400);
    expect((await other.call('PATCH', `/api/v1/knowledge/${kb.id}/documents/${ids[1]}`, { workspaceId: other.workspaceId, enabled: true })).status).toBe(404);

    const del = await k.call('DELETE', `/api/v1/knowledge/${kb.id}/documents/${ids[0]}?workspaceId=${k.workspaceId}`);
    expect(del.status).toBe(200);
    expect(del.body.data.message).toBe('Document deleted successfully');
    expect((await k.document(kb.id, ids[0] as string)).status).toBe(404);
    expect((await k.call('GET', `/api/v1/knowledge/${kb.id}/documents/${ids[0]}/chunks?workspaceId=${k.workspaceId}`)).status).toBe(404);
    expect((await k.document(kb.id, 'nope')).status).toBe(404);
    expect((await other.document(kb.id, ids[2] as string)).status).toBe(404);
  });
});

describe('search', () => {
  let kbA: any;
  let kbB: any;
  const docIds = new Map<string, string>();

  beforeAll(async () => {
    kbA = await k.createBase(uniqueName('Company'));
    kbB = await k.createBase(uniqueName('Kitchen'));
    for (const [name, text] of Object.entries(corpus)) {
      const target = name === 'bread.md' ? kbB : kbA;
      const d = await k.uploadText(target.id, name, text, { tags: { topic: name.replace('.md', '') } });
      docIds.set(name, d.id);
    }
    for (const [name, id] of docIds) await k.processed(name === 'bread.md' ? kbB.id : kbA.id, id);
  });

  const paraphrases: [string, string][] = [
    ['I cannot remember my login credentials, how do I get back into my account?', 'password.md'],
    ['Where do I find my monthly statements and change the card on file?', 'billing.md'],
    ['How many holidays do staff members get each year?', 'vacation.md'],
    ['How is the application released onto our machines?', 'deploy.md'],
  ];

  it.each(paraphrases)('ranks the relevant document first for "%s"', async (query, expected) => {
    const r = await k.search({ knowledgeBaseIds: [kbA.id], query, topK: 4 });
    expect(r.status, r.text).toBe(200);
    const results = r.body.data.results;
    expect(results[0].documentName).toBe(expected);
    expect(results[0]).toMatchObject({ documentId: docIds.get(expected), knowledgeBaseId: kbA.id, chunkIndex: 0, sourceUrl: null });
    for (let i = 1; i < results.length; i++) expect(results[i - 1].similarity).toBeGreaterThanOrEqual(results[i].similarity);
    expect(results[0].similarity).toBeGreaterThan(0);
    expect(results[0].similarity).toBeLessThanOrEqual(1);
    expect(r.body.data).toMatchObject({ query, knowledgeBaseIds: [kbA.id], topK: 4, totalResults: results.length });
  });

  it('searches several bases at once, honours topK, and finds the other base\'s document', async () => {
    const r = await k.search({ knowledgeBaseIds: [kbA.id, kbB.id], query: 'how to make a homemade loaf with yeast', topK: 2 });
    expect(r.status).toBe(200);
    expect(r.body.data.results).toHaveLength(2);
    expect(r.body.data.results[0]).toMatchObject({ documentName: 'bread.md', knowledgeBaseId: kbB.id });
    const single = await k.search({ knowledgeBaseIds: kbB.id, query: 'bread', topK: 10 });
    expect(single.body.data.results.every((x: { knowledgeBaseId: string }) => x.knowledgeBaseId === kbB.id)).toBe(true);
  });

  it('filters on document tags, and hybrid mode fuses the keyword match', async () => {
    const r = await k.search({ knowledgeBaseIds: [kbA.id], query: 'paid leave', topK: 10, filters: { topic: 'billing' } });
    expect(r.status).toBe(200);
    expect(r.body.data.results.map((x: { documentName: string }) => x.documentName)).toEqual(['billing.md']);
    const hybrid = await k.search({ knowledgeBaseIds: [kbA.id], query: 'registry cluster', topK: 3, mode: 'hybrid' });
    expect(hybrid.status).toBe(200);
    expect(hybrid.body.data.mode).toBe('hybrid');
    expect(hybrid.body.data.results[0].documentName).toBe('deploy.md');
  });

  it('never returns disabled or deleted documents', async () => {
    const query = 'How many holidays do staff members get each year?';
    const vacation = docIds.get('vacation.md') as string;
    await k.call('PATCH', `/api/v1/knowledge/${kbA.id}/documents/${vacation}`, { workspaceId: k.workspaceId, enabled: false });
    const off = await k.search({ knowledgeBaseIds: [kbA.id], query, topK: 10 });
    expect(off.body.data.results.map((x: { documentId: string }) => x.documentId)).not.toContain(vacation);
    await k.call('PATCH', `/api/v1/knowledge/${kbA.id}/documents/${vacation}`, { workspaceId: k.workspaceId, enabled: true });
    const on = await k.search({ knowledgeBaseIds: [kbA.id], query, topK: 10 });
    expect(on.body.data.results[0].documentId).toBe(vacation);

    const extra = await k.uploadText(kbA.id, 'holidays.md', 'Staff get twenty five holidays each year.');
    await k.processed(kbA.id, extra.id);
    expect((await k.search({ knowledgeBaseIds: [kbA.id], query, topK: 10 })).body.data.results.map((x: { documentId: string }) => x.documentId)).toContain(extra.id);
    await k.call('DELETE', `/api/v1/knowledge/${kbA.id}/documents/${extra.id}?workspaceId=${k.workspaceId}`);
    expect((await k.search({ knowledgeBaseIds: [kbA.id], query, topK: 10 })).body.data.results.map((x: { documentId: string }) => x.documentId)).not.toContain(extra.id);
  });

  it('refuses bad searches: unknown or foreign bases by name, bounds of topK and query', async () => {
    const missing = '00000000-0000-4000-8000-000000000001';
    const r = await k.search({ knowledgeBaseIds: [kbA.id, missing], query: 'x' });
    expect(r.status).toBe(404);
    expect(r.body.error).toContain(missing);
    const foreign = await other.search({ knowledgeBaseIds: [kbA.id], query: 'x' });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toContain(kbA.id);
    for (const body of [
      { knowledgeBaseIds: [kbA.id], query: 'x', topK: 0 },
      { knowledgeBaseIds: [kbA.id], query: 'x', topK: 101 },
      { knowledgeBaseIds: [kbA.id], query: 'x', topK: 2.5 },
      { knowledgeBaseIds: [kbA.id], query: '' },
      { knowledgeBaseIds: [kbA.id], query: 'x'.repeat(10_001) },
      { knowledgeBaseIds: [], query: 'x' },
      { knowledgeBaseIds: [kbA.id] },
      { knowledgeBaseIds: [kbA.id], query: 'x', mode: 'fuzzy' },
    ]) {
      const bad = await k.search(body);
      expect(bad.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(typeof bad.body.error).toBe('string');
    }
    const malformed = await k.call('POST', '/api/v1/knowledge/search', '{"workspaceId":', { 'content-type': 'application/json' });
    expect(malformed.status).toBe(400);
    const empty = await k.createBase(uniqueName('Empty'));
    const none = await k.search({ knowledgeBaseIds: [empty.id], query: 'anything' });
    expect(none.status).toBe(200);
    expect(none.body.data.results).toEqual([]);
  });

  it('serves the knowledge block in a deployed workflow', async () => {
    const id = await deploy(t, uniqueName('kb-flow'), {
      blocks: [
        start([{ name: 'question', type: 'string' }]),
        { id: 'kb', type: 'knowledge', name: 'Search', config: { query: '<start.question>', knowledgeBaseIds: [kbA.id], topK: 2 } },
      ],
      edges: [{ from: 'start', to: 'kb' }],
    });
    const r = await t.call('POST', `/api/workflows/${id}/execute`, { question: 'What do I do when I forgot my password?' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.success).toBe(true);
    const out = r.body.output;
    expect(out.totalResults).toBe(2);
    expect(out.results[0].documentName).toBe('password.md');

    const foreignId = await deploy(t, uniqueName('kb-foreign'), {
      blocks: [start(), { id: 'kb', type: 'knowledge', name: 'Search', config: { query: 'x', knowledgeBaseIds: ['00000000-0000-4000-8000-000000000002'] } }],
      edges: [{ from: 'start', to: 'kb' }],
    });
    const failed = await t.call('POST', `/api/workflows/${foreignId}/execute`, {});
    expect(failed.body.success).toBe(false);
    expect(failed.body.error).toContain('not found');
  });
});
