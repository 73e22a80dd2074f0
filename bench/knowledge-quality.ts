import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import writeXlsxFile from 'write-excel-file/node';
import { startTestServer, type TestResponse, type TestServer } from '../test/support/harness.js';
import { machine, percentile, runIfMain } from './support.js';

/**
 * knowledge-quality: does search put the right document and the chunk holding the answer first, on real
 * documents that nobody on the team wrote? The corpus is bench/knowledge-corpus/ (sources and licences in
 * its ATTRIBUTION.md); the labelled questions are its questions.json, each naming the one document that
 * answers it and a short text of the answer as it stands in that document.
 *
 * A real server in the default configuration (embedded database unless DATABASE_URL, the local
 * embedding model, default chunking) takes every document through POST /api/v1/knowledge/{id}/documents
 * as multipart, like a user's upload; the Ubuntu release table goes in as an XLSX made here from the
 * CSV (write-excel-file), so that both table formats are asked. Once every document is `completed`, each
 * question is asked through POST /api/v1/knowledge/search (topK 10) in each mode: `default` (no mode
 * given), `vector` and `hybrid`.
 *
 * Per mode, overall and per file type:
 *  - hit@1: the first result comes from the right document;
 *  - answerTop3: one of the first three results comes from the right document and contains the answer
 *    text (compared case-insensitively, whitespace collapsed);
 *  - mrr: mean of 1 / rank of the first result from the right document (0 when none in the top 10);
 *  - p50 latency of the search request.
 * The same figures for the questions at even and at odd positions of questions.json (a tuning half and a
 * held-out half). `unreachable` counts questions whose answer text is in none of the document's stored chunks (a parser
 * problem, not a ranking one); the misses are printed to stderr.
 *
 * Modes are sent as `searchMode` (the reference's name) and `mode` (the earlier name) together, so the
 * same script measures a server that knows either. KB_QUALITY_MODES=vector,hybrid narrows the modes.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CORPUS = path.join(HERE, 'knowledge-corpus');
const TOP_K = 10;

interface Question { q: string; doc: string; answer: string }

interface Upload { name: string; type: string; bytes: Uint8Array }

const MIME: Record<string, string> = {
  csv: 'text/csv', pdf: 'application/pdf', html: 'text/html', md: 'text/markdown', txt: 'text/plain',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

const kindOf = (file: string): string => file.slice(file.lastIndexOf('.') + 1);
const normalize = (text: string): string => text.toLowerCase().replace(/\s+/g, ' ').trim();

/** The Ubuntu release CSV as an XLSX of one sheet, every cell a string as in the CSV. */
async function ubuntuXlsx(): Promise<Uint8Array> {
  const lines = fs.readFileSync(path.join(CORPUS, 'ubuntu.csv'), 'utf8').trim().split('\n');
  const rows = lines.map((line) => line.split(',').map((value) => ({ value, type: String })));
  return new Uint8Array(await writeXlsxFile(rows, { sheet: 'Ubuntu releases' }).toBuffer());
}

async function corpusFiles(questions: Question[]): Promise<Upload[]> {
  const wanted = new Set(questions.map((q) => q.doc));
  const files: Upload[] = [];
  for (const name of fs.readdirSync(CORPUS).sort()) {
    if (name === 'questions.json' || name === 'ATTRIBUTION.md' || name === 'ubuntu.csv') continue;
    files.push({ name, type: MIME[kindOf(name)] ?? '', bytes: new Uint8Array(fs.readFileSync(path.join(CORPUS, name))) });
  }
  files.push({ name: 'ubuntu-releases.xlsx', type: MIME.xlsx, bytes: await ubuntuXlsx() });
  for (const doc of wanted) if (!files.some((f) => f.name === doc)) throw new Error(`questions.json names ${doc}, which is not in the corpus`);
  return files;
}

async function upload(t: TestServer, baseId: string, file: Upload): Promise<string> {
  const form = new FormData();
  form.set('workspaceId', t.workspaceId);
  form.append('file', new Blob([file.bytes], { type: file.type }), file.name);
  const res = await fetch(`${t.url}/api/v1/knowledge/${baseId}/documents`, { method: 'POST', body: form, headers: { 'x-api-key': t.apiKey } });
  const body = (await res.json()) as { data?: { document: { id: string } } };
  if (res.status !== 200 || !body.data) throw new Error(`upload ${file.name}: ${res.status} ${JSON.stringify(body)}`);
  return body.data.document.id;
}

interface DocState { id: string; name: string; status: string; chunkCount: number; error: string | null }

/** A call of the API that waits out the plan's rate limit (429 with Retry-After) instead of failing. */
async function call(t: TestServer, method: string, url: string, body?: unknown): Promise<TestResponse & { ms: number }> {
  for (;;) {
    const began = performance.now();
    const r = await t.call(method, url, body);
    if (r.status !== 429) return { ...r, ms: performance.now() - began };
    await new Promise((resolve) => setTimeout(resolve, 1000 * Number(r.headers.get('retry-after') ?? 1)));
  }
}

async function waitForDocuments(t: TestServer, baseId: string, ids: Map<string, string>): Promise<DocState[]> {
  for (;;) {
    const r = await call(t, 'GET', `/api/v1/knowledge/${baseId}/documents?workspaceId=${t.workspaceId}&limit=100`);
    if (r.status !== 200) throw new Error(`list documents: ${r.status} ${r.text}`);
    const listed = r.body.data.documents as { id: string; processingStatus: string; chunkCount: number }[];
    if (listed.every((d) => d.processingStatus === 'completed' || d.processingStatus === 'failed')) {
      const states: DocState[] = [];
      for (const [name, id] of ids) {
        const d = (await call(t, 'GET', `/api/v1/knowledge/${baseId}/documents/${id}?workspaceId=${t.workspaceId}`)).body.data.document;
        states.push({ id, name, status: d.processingStatus, chunkCount: d.chunkCount, error: d.processingError });
      }
      return states;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function documentText(t: TestServer, baseId: string, id: string): Promise<string[]> {
  const chunks: string[] = [];
  for (let offset = 0; ; offset += 100) {
    const r = await call(t, 'GET', `/api/v1/knowledge/${baseId}/documents/${id}/chunks?workspaceId=${t.workspaceId}&limit=100&offset=${offset}`);
    const page = r.body.data as { chunks: { content: string }[]; pagination: { hasMore: boolean } };
    chunks.push(...page.chunks.map((c) => normalize(c.content)));
    if (!page.pagination.hasMore) return chunks;
  }
}

interface Hit { documentName: string; content: string; similarity: number }
interface Score { hit1: number; answerTop3: number; rr: number; ms: number }

async function ask(t: TestServer, baseId: string, q: Question, mode: string): Promise<{ score: Score; hits: Hit[] }> {
  const body: Record<string, unknown> = { workspaceId: t.workspaceId, knowledgeBaseIds: [baseId], query: q.q, topK: TOP_K };
  if (mode !== 'default') Object.assign(body, { searchMode: mode, mode });
  const r = await call(t, 'POST', '/api/v1/knowledge/search', body);
  const ms = r.ms;
  if (r.status !== 200) throw new Error(`search "${q.q}" (${mode}): ${r.status} ${r.text}`);
  const hits = r.body.data.results as Hit[];
  for (const h of hits) {
    if (!(typeof h.similarity === 'number' && h.similarity >= 0 && h.similarity <= 1)) throw new Error(`similarity out of [0, 1]: ${h.similarity}`);
  }
  const answer = normalize(q.answer);
  const rank = hits.findIndex((h) => h.documentName === q.doc);
  return {
    hits,
    score: {
      hit1: rank === 0 ? 1 : 0,
      answerTop3: hits.slice(0, 3).some((h) => h.documentName === q.doc && normalize(h.content).includes(answer)) ? 1 : 0,
      rr: rank < 0 ? 0 : 1 / (rank + 1),
      ms,
    },
  };
}

function summarize(scores: Score[]): Record<string, number> {
  const mean = (pick: (s: Score) => number) => Math.round((scores.reduce((n, s) => n + pick(s), 0) / Math.max(1, scores.length)) * 1000) / 1000;
  return {
    n: scores.length, hit1: mean((s) => s.hit1), answerTop3: mean((s) => s.answerTop3), mrr: mean((s) => s.rr),
    p50ms: Math.round(percentile(scores.map((s) => s.ms).sort((a, b) => a - b), 50) * 10) / 10,
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const questions = JSON.parse(fs.readFileSync(path.join(CORPUS, 'questions.json'), 'utf8')) as Question[];
  const modes = (process.env.KB_QUALITY_MODES ?? 'default,vector,hybrid').split(',').map((m) => m.trim()).filter(Boolean);
  const files = await corpusFiles(questions);
  const t = await startTestServer();
  try {
    const created = await t.call('POST', '/api/v1/knowledge', { workspaceId: t.workspaceId, name: 'knowledge-quality' });
    if (created.status !== 200) throw new Error(`create base: ${created.status} ${created.text}`);
    const base = created.body.data.knowledgeBase as { id: string; embeddingModel: string };
    const began = performance.now();
    const ids = new Map<string, string>();
    for (const f of files) ids.set(f.name, await upload(t, base.id, f));
    const states = await waitForDocuments(t, base.id, ids);
    const ingestMs = Math.round(performance.now() - began);
    const failed = states.filter((s) => s.status !== 'completed');
    for (const s of failed) process.stderr.write(`FAILED ${s.name}: ${s.error}\n`);

    const chunksOf = new Map<string, string[]>();
    for (const s of states) chunksOf.set(s.name, s.status === 'completed' ? await documentText(t, base.id, s.id) : []);
    const unreachable = questions.filter((q) => !(chunksOf.get(q.doc) ?? []).some((c) => c.includes(normalize(q.answer))));
    for (const q of unreachable) process.stderr.write(`UNREACHABLE ${q.doc}: "${q.answer}" is in none of its chunks\n`);

    const figures: Record<string, unknown> = {
      machine: machine(), database: process.env.DATABASE_URL ? 'postgres' : 'pglite', embeddingModel: base.embeddingModel,
      documents: files.length, chunks: states.reduce((n, s) => n + s.chunkCount, 0), failedDocuments: failed.length, ingestMs,
      questions: questions.length, unreachable: unreachable.length,
    };
    const types = [...new Set(questions.map((q) => kindOf(q.doc)))].sort();
    for (const mode of modes) {
      // One warm-up query: the first search loads the query path (and the model, where it is lazy).
      await ask(t, base.id, questions[0] as Question, mode);
      const scored: { q: Question; score: Score }[] = [];
      for (const q of questions) {
        const { score, hits } = await ask(t, base.id, q, mode);
        scored.push({ q, score });
        if (!score.hit1 || !score.answerTop3) {
          const top = hits.slice(0, 3).map((h) => `${h.documentName}@${h.similarity.toFixed(3)}`).join(', ');
          process.stderr.write(`[${mode}] ${score.hit1 ? 'hit' : 'MISS'} ${score.answerTop3 ? 'answer' : 'NO-ANSWER'} ${q.doc}: ${q.q} -> ${top}\n`);
        }
      }
      for (const [key, value] of Object.entries(summarize(scored.map((s) => s.score)))) figures[`${mode}.${key}`] = value;
      // Halves of the questions (even and odd positions in questions.json): the rerank's two settings were
      // chosen on the even half, so the odd half shows whether they carry over (bench/RESULTS.md).
      for (const half of ['even', 'odd'] as const) {
        const of = summarize(scored.filter((_, i) => i % 2 === (half === 'even' ? 0 : 1)).map((s) => s.score));
        figures[`${mode}.half.${half}`] = `hit1 ${of.hit1} top3 ${of.answerTop3} mrr ${of.mrr} (n ${of.n})`;
      }
      for (const type of types) {
        const of = summarize(scored.filter((s) => kindOf(s.q.doc) === type).map((s) => s.score));
        figures[`${mode}.${type}`] = `hit1 ${of.hit1} top3 ${of.answerTop3} mrr ${of.mrr} (n ${of.n})`;
      }
    }
    return figures;
  } finally {
    await t.close();
  }
}

await runIfMain(import.meta.url, 'knowledge-quality', run);
