import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chunkDocument } from '../src/knowledge/chunker.js';
import { LocalEmbedder } from '../src/knowledge/local-embedder.js';
import { parseDocument } from '../src/knowledge/parse.js';
import { textToEmbed } from '../src/knowledge/ranking.js';
import { completeDocument, type IngestedChunk } from '../src/knowledge/store.js';
import { DEFAULT_CHUNKING } from '../src/knowledge/wire-format.js';
import { newId } from '../src/ids.js';
import { createKey, createWorkspace } from '../test/support/accounts.js';
import { startTestServer, type TestServer } from '../test/support/harness.js';
import { runIfMain } from './support.js';

/**
 * knowledge-ingest: chunks per second end to end for about KB_BENCH_MB (default 2) MB of markdown made
 * here (documents of 4 to 20 KB with headings, paragraphs and lists; words drawn from a generated
 * vocabulary so that no two chunks are alike), local embedder, default chunking (1024 tokens, overlap 200).
 *
 * End to end: every document uploaded as JSON ({workspaceId, filename, content}) to
 * POST /api/v1/knowledge/{id}/documents, one request each, one after another; the clock runs from the
 * first upload until the document list (polled every 250 ms) shows every document `completed`.
 *
 * Where the time goes, measured apart in this process after the run, on the same input:
 *  - parse + chunk: `parseDocument` and `chunkDocument` over every document;
 *  - embed: a fresh `LocalEmbedder` over the stored chunks' texts as the ingest embeds them (`textToEmbed`:
 *    heading path and content), batches of 32 one after another (what an ingest does), after a first call
 *    that loads the model (reported on its own);
 *  - write: the stored chunks (texts and vectors read back) written again, document by document, by
 *    `store.completeDocument` (the ingest's own write, HNSW index maintained) into a second base.
 * The rest of the end-to-end time is HTTP, the queue, and contention: the server's embedding worker and
 * the database (on PGlite, the server's own thread) share the two cores.
 *
 * PGlite by default; DATABASE_URL=postgres://... runs it on PostgreSQL (the database must exist and have
 * pgvector).
 */

const POLL_MS = 250;
const EMBED_BATCH = 32;
const MB = 1_000_000;

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COMMON = [
  'the', 'a', 'of', 'to', 'and', 'in', 'is', 'for', 'on', 'with', 'that', 'by', 'as', 'it', 'from', 'at', 'be', 'this', 'can', 'when',
  'each', 'which', 'are', 'or', 'not', 'after', 'before', 'every', 'its', 'their', 'only', 'then', 'more', 'than', 'also', 'into',
];
const DOMAIN = [
  'account', 'invoice', 'workflow', 'request', 'server', 'customer', 'policy', 'report', 'schedule', 'table', 'record', 'payment',
  'deployment', 'region', 'backup', 'token', 'limit', 'queue', 'message', 'document', 'search', 'index', 'model', 'team', 'project',
  'release', 'contract', 'license', 'network', 'storage', 'database', 'webhook', 'retry', 'timeout', 'error', 'setting', 'approval',
  'shipment', 'warehouse', 'supplier', 'budget', 'forecast', 'meeting', 'ticket', 'incident', 'alert', 'dashboard', 'password',
];
const VERBS = [
  'configures', 'sends', 'stores', 'validates', 'rejects', 'retries', 'exports', 'imports', 'schedules', 'approves', 'measures',
  'records', 'updates', 'deletes', 'creates', 'checks', 'reviews', 'renews', 'charges', 'notifies', 'tracks', 'limits', 'splits',
];
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tor', 'vel', 'san', 'dri', 'po', 'qua', 'zen', 'bal', 'fir', 'gor', 'hal', 'jun', 'nex', 'or', 'pla', 'ste'];

/** A markdown corpus of at least `bytes` bytes, deterministic for a given size. */
export function generateCorpus(bytes: number): { filename: string; content: string }[] {
  const rand = prng(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  // Made-up terms (product names, codes): they make chunks differ and exercise the tokenizer.
  const terms = Array.from({ length: 4000 }, () => {
    const n = 2 + Math.floor(rand() * 3);
    let w = '';
    for (let i = 0; i < n; i++) w += pick(SYLLABLES);
    return w;
  });
  const word = (): string => {
    const r = rand();
    if (r < 0.45) return pick(COMMON);
    if (r < 0.75) return pick(DOMAIN);
    if (r < 0.85) return pick(VERBS);
    if (r < 0.97) return pick(terms);
    return String(Math.floor(rand() * 10_000));
  };
  const sentence = (): string => {
    const n = 8 + Math.floor(rand() * 14);
    const words = Array.from({ length: n }, word);
    const s = words.join(' ');
    return `${s[0].toUpperCase()}${s.slice(1)}${rand() < 0.1 ? '?' : '.'}`;
  };
  const paragraph = (): string => Array.from({ length: 3 + Math.floor(rand() * 4) }, sentence).join(' ');
  const title = (): string => {
    const t = `${pick(DOMAIN)} ${pick(terms)} ${pick(DOMAIN)}`;
    return `${t[0].toUpperCase()}${t.slice(1)}`;
  };
  const list = (ordered: boolean): string => Array.from({ length: 3 + Math.floor(rand() * 4) }, (_, i) => {
    const item = Array.from({ length: 4 + Math.floor(rand() * 8) }, word).join(' ');
    return `${ordered ? `${i + 1}.` : '-'} ${item}`;
  }).join('\n');

  const docs: { filename: string; content: string }[] = [];
  let total = 0;
  while (total < bytes) {
    const target = 4_000 + Math.floor(rand() * 16_000);
    const parts = [`# ${title()}`, paragraph()];
    let size = parts.join('\n\n').length;
    while (size < target) {
      const section = [`## ${title()}`, paragraph()];
      if (rand() < 0.4) section.push(list(rand() < 0.3));
      if (rand() < 0.5) section.push(paragraph());
      if (rand() < 0.3) section.push(`### ${title()}`, paragraph());
      const text = section.join('\n\n');
      parts.push(text);
      size += text.length + 2;
    }
    const content = `${parts.join('\n\n')}\n`;
    docs.push({ filename: `doc-${String(docs.length + 1).padStart(4, '0')}.md`, content });
    total += Buffer.byteLength(content);
  }
  return docs;
}

async function startBenchServer(): Promise<TestServer> {
  const env = { WEFT_LIMITS: 'off', WEFT_DEFAULT_PLAN: 'enterprise' };
  const url = process.env.DATABASE_URL;
  return url ? startTestServer({ env, reuse: { databaseUrl: url } }) : startTestServer({ env });
}

async function api(t: TestServer, key: string, method: string, p: string, body?: unknown): Promise<{ data: Record<string, unknown> }> {
  const res = await fetch(t.url + p, {
    method,
    headers: { 'x-api-key': key, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as { data: Record<string, unknown> };
}

interface ListedDocument { id: string; processingStatus: string; chunkCount: number; tokenCount: number }

/** Every document of the base, through the list endpoint (pages of 100). */
async function listAll(t: TestServer, key: string, workspaceId: string, baseId: string): Promise<ListedDocument[]> {
  const all: ListedDocument[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await api(t, key, 'GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${workspaceId}&limit=100&offset=${offset}`);
    const docs = page.data.documents as ListedDocument[];
    all.push(...docs);
    if (!(page.data.pagination as { hasMore: boolean }).hasMore) return all;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 1) => +n.toFixed(digits);

export async function run(): Promise<Record<string, unknown>> {
  const mb = Number(process.env.KB_BENCH_MB ?? 2);
  if (!(mb > 0 && mb <= 200)) throw new Error('KB_BENCH_MB must be a number in (0, 200]');
  const onPostgres = Boolean(process.env.DATABASE_URL);
  const log = (msg: string) => process.stderr.write(`[knowledge-ingest] ${new Date().toISOString()} ${msg}\n`);

  const corpus = generateCorpus(mb * MB);
  const corpusBytes = corpus.reduce((n, d) => n + Buffer.byteLength(d.content), 0);
  log(`corpus: ${corpus.length} documents, ${corpusBytes} bytes`);

  const t = await startBenchServer();
  let baseId = '';
  let cleanup: (() => Promise<unknown>) | undefined;
  try {
    const db = t.server.ctx.db;
    const ws = await createWorkspace(db, `bench-kb-ingest-${Date.now()}-${process.pid}`, t.userId, 'enterprise');
    const key = (await createKey(db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' })).secret;
    const created = await api(t, key, 'POST', '/api/v1/knowledge', { workspaceId: ws.id, name: 'bench-ingest' });
    baseId = (created.data.knowledgeBase as { id: string }).id;
    cleanup = () => db.query('DELETE FROM knowledge_bases WHERE workspace_id = $1', [ws.id]);

    // End to end.
    const t0 = performance.now();
    for (const d of corpus) {
      await api(t, key, 'POST', `/api/v1/knowledge/${baseId}/documents`, { workspaceId: ws.id, filename: d.filename, content: d.content });
    }
    const uploadMs = performance.now() - t0;
    log(`uploaded in ${Math.round(uploadMs)} ms`);
    let docs: ListedDocument[];
    let firstCompletedMs: number | undefined;
    for (;;) {
      docs = await listAll(t, key, ws.id, baseId);
      if (firstCompletedMs === undefined && docs.some((d) => d.processingStatus === 'completed')) firstCompletedMs = performance.now() - t0;
      const failed = docs.filter((d) => d.processingStatus === 'failed');
      if (failed.length > 0) throw new Error(`${failed.length} documents failed, e.g. ${failed[0].id}`);
      if (docs.length === corpus.length && docs.every((d) => d.processingStatus === 'completed')) break;
      await sleep(POLL_MS);
    }
    const wallMs = performance.now() - t0;
    const chunks = docs.reduce((n, d) => n + d.chunkCount, 0);
    const tokens = docs.reduce((n, d) => n + d.tokenCount, 0);
    log(`${chunks} chunks, all completed after ${Math.round(wallMs)} ms`);
    const span = (await db.query<{ processing_ms: number; busy_ms: number }>(
      `SELECT (extract(epoch FROM max(processing_completed_at) - min(processing_started_at)) * 1000)::float8 AS processing_ms,
              (sum(extract(epoch FROM processing_completed_at - processing_started_at)) * 1000)::float8 AS busy_ms
         FROM knowledge_documents WHERE knowledge_base_id = $1`,
      [baseId],
    ))[0];

    // Where the time goes: parse + chunk, then the embedder alone, on the same texts.
    let p0 = performance.now();
    let localChunks = 0;
    for (const d of corpus) {
      const parsed = await parseDocument('md', new TextEncoder().encode(d.content));
      localChunks += chunkDocument(parsed, DEFAULT_CHUNKING).length;
    }
    const parseChunkMs = performance.now() - p0;

    const stored = await db.query<{ document_id: string; chunk_index: number; content: string; token_count: number; metadata: Record<string, unknown>; vec: string }>(
      `SELECT document_id, chunk_index, content, token_count, metadata, embedding::text AS vec
         FROM knowledge_chunks WHERE knowledge_base_id = $1 ORDER BY document_id, chunk_index`,
      [baseId],
    );
    // What the ingest embeds: the content led by its heading path (`textToEmbed`), not the bare content.
    const texts = stored.map((r) => textToEmbed({ content: r.content, metadata: r.metadata }));
    const embedder = new LocalEmbedder();
    let embedLoadMs: number;
    let embedMs: number;
    try {
      p0 = performance.now();
      await embedder.embed(['model load']);
      embedLoadMs = performance.now() - p0;
      p0 = performance.now();
      for (let i = 0; i < texts.length; i += EMBED_BATCH) await embedder.embed(texts.slice(i, i + EMBED_BATCH));
      embedMs = performance.now() - p0;
    } finally {
      await embedder.close();
    }
    log(`embedder alone: ${texts.length} chunks in ${Math.round(embedMs)} ms`);

    // The ingest's write alone: the same chunks, one transaction per document, into a second base.
    const second = await api(t, key, 'POST', '/api/v1/knowledge', { workspaceId: ws.id, name: 'bench-ingest-writes' });
    const secondId = (second.data.knowledgeBase as { id: string }).id;
    const byDocument = new Map<string, IngestedChunk[]>();
    for (const r of stored) {
      const list = byDocument.get(r.document_id) ?? [];
      list.push({ index: r.chunk_index, content: r.content, tokenCount: r.token_count, metadata: r.metadata, embedding: JSON.parse(r.vec) as number[] });
      byDocument.set(r.document_id, list);
    }
    let writeMs = 0;
    for (const list of byDocument.values()) {
      const id = newId();
      await db.query(
        `INSERT INTO knowledge_documents (id, knowledge_base_id, workspace_id, filename, mime_type, file_kind, file_size, processing_status, attempts)
         VALUES ($1, $2, $3, 'copy.md', 'text/markdown', 'md', 0, 'processing', 1)`,
        [id, secondId, ws.id],
      );
      const w0 = performance.now();
      const ok = await db.tx((q) => completeDocument(q, { id, baseId: secondId, attempt: 1, dimension: 512 }, list, {
        tokens: list.reduce((n, c) => n + c.tokenCount, 0), characters: list.reduce((n, c) => n + c.content.length, 0),
      }));
      writeMs += performance.now() - w0;
      if (!ok) throw new Error('completeDocument refused the copy');
    }
    log(`writes alone: ${stored.length} chunks in ${Math.round(writeMs)} ms`);

    const meanChars = stored.reduce((n, r) => n + r.content.length, 0) / stored.length;
    const meanEmbedChars = texts.reduce((n, x) => n + x.length, 0) / texts.length;
    return {
      corpusMB: round(corpusBytes / MB, 3),
      corpusBytes,
      documents: corpus.length,
      chunks,
      tokens,
      meanChunkChars: Math.round(meanChars),
      meanEmbeddedChars: Math.round(meanEmbedChars),
      chunking: DEFAULT_CHUNKING,
      workerConcurrency: t.config.workerConcurrency,
      uploadMs: Math.round(uploadMs),
      wallMs: Math.round(wallMs),
      firstDocumentCompletedMs: Math.round(firstCompletedMs ?? 0),
      chunksPerSec: round(chunks / (wallMs / 1000)),
      MBPerSec: round(corpusBytes / MB / (wallMs / 1000), 3),
      docsPerSec: round(corpus.length / (wallMs / 1000), 2),
      'server.firstStartToLastCompleteMs': Math.round(Number(span?.processing_ms ?? 0)),
      'server.sumOfDocumentProcessingMs': Math.round(Number(span?.busy_ms ?? 0)),
      'direct.parseChunkMs': Math.round(parseChunkMs),
      'direct.parseChunkChunks': localChunks,
      'direct.embedModelLoadMs': Math.round(embedLoadMs),
      'direct.embedMs': Math.round(embedMs),
      'direct.embedChunksPerSec': round(texts.length / (embedMs / 1000)),
      'direct.embedShareOfWall': round(embedMs / wallMs, 3),
      'direct.writeMs': Math.round(writeMs),
      'direct.writeChunksPerSec': round(stored.length / (writeMs / 1000)),
      'direct.writeShareOfWall': round(writeMs / wallMs, 3),
    };
  } finally {
    // Keep a reused PostgreSQL database small (the search benchmark shares the chunk table).
    if (onPostgres && cleanup) await cleanup().catch(() => undefined);
    await t.close();
    const dir = t.config.dataDir;
    if (!onPostgres && dir && path.basename(dir).startsWith('weft-test-') && dir.startsWith(os.tmpdir())) {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
}

await runIfMain(import.meta.url, 'knowledge-ingest', run);
