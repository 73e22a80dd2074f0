import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';
import { bigCsv, bigParagraphsDocx, manyPagePdf, zerosBomb } from './hostile-files.js';
import { type FakeEmbeddings, KnowledgeClient, otherWorkspace, startFakeEmbeddings, uniqueName } from './helpers.js';

// Untrusted documents are parsed in a worker with its own heap, within named bounds: each hostile file below
// ends `failed` naming the bound it broke, and while it is ingested the server answers /healthz and another
// workspace's run. (Timing figures: bench/knowledge-hostile.ts.)

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

let fake: FakeEmbeddings;
beforeAll(async () => {
  fake = await startFakeEmbeddings();
});
afterAll(() => fake?.close());

const fakeEnv = () => ({ EMBEDDINGS_BASE_URL: fake.url, EMBEDDINGS_MODEL: 'fake-embed-64' });

/** A workspace that is not the uploader's, with a deployed one-block workflow. */
async function otherTenantRun(t: TestServer): Promise<() => Promise<void>> {
  const other = await otherWorkspace(t, 'enterprise');
  const created = await other.call('POST', '/api/v1/workflows', {
    workspaceId: other.workspaceId, name: uniqueName('tenant-b'), definition: { blocks: [start(), fn('double', 'return { answer: 21 * 2 }')], edges: [{ from: 'start', to: 'double' }] },
  });
  expect(created.status, created.text).toBe(201);
  const id: string = created.body.data.workflow.id;
  expect((await other.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
  return async () => {
    const r = await other.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.status, r.text).toBe(200);
    expect(r.body.output).toEqual({ answer: 42 });
  };
}

describe('hostile documents on the default bounds', () => {
  let t: TestServer;
  let k: KnowledgeClient;
  let baseId: string;
  let runOtherTenant: () => Promise<void>;

  beforeAll(async () => {
    t = await startTestServer({ env: fakeEnv() });
    k = new KnowledgeClient(t);
    baseId = (await k.createBase(uniqueName('hostile'))).id;
    runOtherTenant = await otherTenantRun(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Uploads the file (multipart), checks the server serves others meanwhile, and returns the finished document. */
  async function ingestWhileServing(name: string, bytes: Buffer): Promise<any> {
    const up = await k.uploadFiles(baseId, [{ name, bytes }]);
    expect(up.status, up.text).toBe(200);
    expect(up.body.data.document.processingStatus).toBe('pending');
    const health = await fetch(`${t.url}/healthz`);
    expect(health.status).toBe(200);
    await runOtherTenant();
    return k.processed(baseId, up.body.data.document.id, 120_000);
  }

  it('fails a DOCX whose paragraphs inflate to hundreds of MB, by its declared size and, when it lies, while inflating', async () => {
    const honest = await ingestWhileServing('report.docx', bigParagraphsDocx(1_300_000));
    expect(honest.processingStatus).toBe('failed');
    expect(honest.processingError).toMatch(/^The document exceeds WEFT_KNOWLEDGE_MAX_ARCHIVE_BYTES \(104,857,600 bytes inflated\): its parts declare 3\d\d,\d{3},\d{3} bytes$/);

    const lying = await ingestWhileServing('lying.docx', bigParagraphsDocx(1_300_000, { declaredSize: 4096 }));
    expect(lying.processingStatus).toBe('failed');
    expect(lying.processingError).toBe('The document exceeds WEFT_KNOWLEDGE_MAX_ARCHIVE_BYTES (104,857,600 bytes inflated): word/document.xml inflates past it');
    expect(lying.chunkCount).toBe(0);
  }, 180_000);

  it('fails DOCX and XLSX zip bombs (2 GiB of zeros), whether their sizes are declared or hidden, and a smaller bomb by its ratio', async () => {
    const docx = await ingestWhileServing('bomb.docx', zerosBomb('docx', 2 * GiB));
    // 2 GiB of zeros plus the few hundred bytes of the other XML parts.
    expect(docx.processingError).toMatch(/^The document exceeds WEFT_KNOWLEDGE_MAX_ARCHIVE_BYTES \(104,857,600 bytes inflated\): its parts declare 2,147,48\d,\d{3} bytes$/);

    const hidden = await ingestWhileServing('bomb.xlsx', zerosBomb('xlsx', 2 * GiB, 2048));
    expect(hidden.processingError).toBe('The document exceeds WEFT_KNOWLEDGE_MAX_ARCHIVE_BYTES (104,857,600 bytes inflated): xl/worksheets/sheet1.xml inflates past it');

    const small = await ingestWhileServing('small-bomb.xlsx', zerosBomb('xlsx', 64 * MiB));
    expect(small.processingError).toMatch(/^The document exceeds WEFT_KNOWLEDGE_MAX_COMPRESSION_RATIO \(200:1\): xl\/worksheets\/sheet1\.xml declares 67,108,864 bytes from [\d,]+$/);
    for (const d of [docx, hidden, small]) expect(d.processingStatus).toBe('failed');
  }, 180_000);

  it('fails a 5,000-page PDF by its page count', async () => {
    const pdf = await ingestWhileServing('long.pdf', manyPagePdf(5000));
    expect(pdf.processingStatus).toBe('failed');
    expect(pdf.processingError).toBe('The document exceeds WEFT_KNOWLEDGE_MAX_PDF_PAGES (2,000 pages): it has 5,000');
  }, 120_000);

  it('takes a CSV of a million rows without parsing it in the request, then fails it by its rows', async () => {
    const csv = await ingestWhileServing('rows.csv', bigCsv(1_000_000));
    expect(csv.processingStatus).toBe('failed');
    expect(csv.processingError).toBe('The document exceeds WEFT_KNOWLEDGE_MAX_ROWS (200,000 rows)');
    expect(csv.fileSize).toBeGreaterThan(25_000_000);
    // 74 s in CI on a slow day (2026-11-27): the bound leaves room for a slower one.
  }, 240_000);

  it('still ingests ordinary documents of every archive kind afterwards', async () => {
    const doc = await k.uploadText(baseId, 'fine.md', '# Fine\n\nAn ordinary document after the hostile ones.');
    const done = await k.processed(baseId, doc.id);
    expect(done.processingStatus).toBe('completed');
    expect(done.chunkCount).toBe(1);
  });
});

describe('a document that exhausts its worker', () => {
  let t: TestServer;
  let k: KnowledgeClient;

  beforeAll(async () => {
    // A small heap and no row bound: the CSV below runs its worker out of memory every time.
    t = await startTestServer({ env: { ...fakeEnv(), WEFT_KNOWLEDGE_WORKER_HEAP_MB: '48', WEFT_KNOWLEDGE_MAX_ROWS: '100000000', WEFT_KNOWLEDGE_MAX_CHARACTERS: '1000000000' } });
    k = new KnowledgeClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is retried twice, then fails as crashed repeatedly, and the server keeps serving', async () => {
    const baseId = (await k.createBase(uniqueName('oom'))).id;
    const runOtherTenant = await otherTenantRun(t);
    const up = await k.uploadFiles(baseId, [{ name: 'huge.csv', bytes: bigCsv(1_000_000) }]);
    expect(up.status, up.text).toBe(200);
    const doc = await k.processed(baseId, up.body.data.document.id, 180_000);
    expect(doc.processingStatus).toBe('failed');
    expect(doc.processingError).toBe(
      'Processing crashed repeatedly (3 times): the document needs more memory than WEFT_KNOWLEDGE_WORKER_HEAP_MB (48 MB) allows, or breaks its parser',
    );
    const [row] = await t.server.ctx.db.query<{ crashed_attempts: number }>('SELECT crashed_attempts FROM knowledge_documents WHERE id = $1', [doc.id]);
    expect(row?.crashed_attempts).toBe(4);

    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    await runOtherTenant();
    const fine = await k.uploadText(baseId, 'fine.txt', 'A small document parses in a fresh worker.');
    expect((await k.processed(baseId, fine.id)).processingStatus).toBe('completed');
  }, 240_000);
});

describe('the ingest-lease sweep', () => {
  it('takes over a document left processing with an expired lease, on either database, without a restart', async () => {
    const t = await startTestServer({ env: { ...fakeEnv(), WEFT_JOB_LEASE_MS: '1000' } });
    try {
      const k = new KnowledgeClient(t);
      const baseId = (await k.createBase(uniqueName('sweep'))).id;
      const doc = await k.uploadText(baseId, 'swept.txt', 'A document whose ingest was abandoned midway.');
      expect((await k.processed(baseId, doc.id)).processingStatus).toBe('completed');
      // As a worker that died midway would leave it: processing, lease run out, no ingest in flight.
      await t.server.ctx.db.query(
        `UPDATE knowledge_documents SET processing_status = 'processing', processing_completed_at = NULL,
           lease_until = clock_timestamp() - interval '1 second' WHERE id = $1`,
        [doc.id],
      );
      expect((await k.document(baseId, doc.id)).body.data.document.processingStatus).toBe('processing');
      const again = await k.processed(baseId, doc.id, 30_000);
      expect(again.processingStatus).toBe('completed');
      expect(again.chunkCount).toBe(1);
    } finally {
      await t.close();
    }
  }, 60_000);
});

describe('document names', () => {
  let t: TestServer;
  let k: KnowledgeClient;
  let baseId: string;

  beforeAll(async () => {
    t = await startTestServer({ env: fakeEnv() });
    k = new KnowledgeClient(t);
    baseId = (await k.createBase(uniqueName('names'))).id;
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A multipart upload whose file part carries `disposition` verbatim after `form-data; name="file"; `. */
  async function rawMultipart(disposition: string) {
    const boundary = 'weft-test-boundary';
    const body = [
      `--${boundary}`, 'Content-Disposition: form-data; name="workspaceId"', '', k.workspaceId,
      `--${boundary}`, `Content-Disposition: form-data; name="file"; ${disposition}`, 'Content-Type: text/plain', '', 'text',
      `--${boundary}--`, '',
    ].join('\r\n');
    const res = await fetch(`${t.url}/api/v1/knowledge/${baseId}/documents`, {
      method: 'POST', body, headers: { 'x-api-key': k.key, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    return { status: res.status, text: await res.clone().text(), body: (await res.json()) as { error: string } };
  }

  const count = async () => (await k.call('GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${k.workspaceId}`)).body.data.pagination.total;

  it('stores a non-ASCII multipart name as sent, and drops a directory part from either kind of upload', async () => {
    const up = await k.uploadFiles(baseId, [{ name: 'résumé_日本.txt', bytes: Buffer.from('A curriculum vitae.') }]);
    expect(up.status, up.text).toBe(200);
    expect(up.body.data.document.filename).toBe('résumé_日本.txt');
    expect((await k.document(baseId, up.body.data.document.id)).body.data.document.filename).toBe('résumé_日本.txt');

    const json = await k.uploadText(baseId, '../../etc/notes.txt', 'Notes.');
    expect(json.filename).toBe('notes.txt');
    const form = new FormData();
    form.set('workspaceId', k.workspaceId);
    form.append('file', new Blob(['Notes.']), 'C:\\Users\\me\\notes.txt');
    const windows = await k.rawUpload(baseId, form);
    expect(windows.status, windows.text).toBe(200);
    expect(windows.body.data.document.filename).toBe('notes.txt');
  });

  const NUL_IN_JSON = 'Request body holds a string with a NUL character (\\u0000) or an unpaired surrogate, which cannot be stored';

  it('refuses a NUL or control character and a 10,000-character name with 400 in JSON and multipart, storing nothing', async () => {
    const before = await count();
    for (const filename of ['bad\u0000name.txt', 'bad\u0007bell.txt', `${'x'.repeat(10_000)}.txt`]) {
      const json = await k.call('POST', `/api/v1/knowledge/${baseId}/documents`, { workspaceId: k.workspaceId, filename, content: 'text' });
      expect(json.status, json.text).toBe(400);
      // A NUL in any JSON string is refused by the body parser before the filename is looked at.
      expect(json.body.error).toBe(filename.includes('\u0000') ? NUL_IN_JSON
        : filename.length > 255 ? 'filename must be at most 255 characters (it has 10004)' : 'filename must not contain control characters');
      const multipart = await k.uploadFiles(baseId, [{ name: filename, bytes: Buffer.from('text') }]);
      expect(multipart.status, multipart.text).toBe(400);
      // busboy itself refuses a raw control character in a part header; the percent-encoded form below reaches our check.
      expect(multipart.body.error).toBe(filename.length > 255 ? json.body.error : 'Malformed multipart/form-data body');
    }
    const encoded = await rawMultipart(`filename*=UTF-8''bad%00name.txt`);
    expect(encoded.status, encoded.text).toBe(400);
    expect(encoded.body.error).toBe('filename must not contain control characters');
    expect(await count()).toBe(before);
  });

  it('accepts exactly 255 characters, counted as characters rather than bytes, and checks renames the same way', async () => {
    const name = `${'日'.repeat(251)}.txt`;
    const doc = await k.uploadText(baseId, name, 'text');
    expect(doc.filename).toBe(name);
    const rename = await k.call('PATCH', `/api/v1/knowledge/${baseId}/documents/${doc.id}`, { workspaceId: k.workspaceId, filename: 'a\u0007b.txt' });
    expect(rename.status).toBe(400);
    expect(rename.body.error).toBe('filename must not contain control characters');
  });
});
