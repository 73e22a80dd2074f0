import http from 'node:http';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, type TestResponse, type TestServer } from '../support/harness.js';

/** Calls of the knowledge API as one workspace's key, for the suites in this folder. */
export class KnowledgeClient {
  constructor(readonly t: TestServer, readonly workspaceId = t.workspaceId, readonly key = t.apiKey) {}

  call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
    return request(this.t.url + path, method, body, { 'x-api-key': this.key, ...headers });
  }

  async createBase(name: string, extra: Record<string, unknown> = {}): Promise<any> {
    const r = await this.call('POST', '/api/v1/knowledge', { workspaceId: this.workspaceId, name, ...extra });
    if (r.status !== 200) throw new Error(`create base ${name}: ${r.status} ${r.text}`);
    return r.body.data.knowledgeBase;
  }

  /** Uploads a text document as JSON; returns the pending document. */
  async uploadText(baseId: string, filename: string, content: string, extra: Record<string, unknown> = {}): Promise<any> {
    const r = await this.call('POST', `/api/v1/knowledge/${baseId}/documents`, { workspaceId: this.workspaceId, filename, content, ...extra });
    if (r.status !== 200) throw new Error(`upload ${filename}: ${r.status} ${r.text}`);
    return r.body.data.document;
  }

  /** Uploads files as multipart/form-data. */
  uploadFiles(baseId: string, files: { name: string; type?: string; bytes: Uint8Array }[], fields: Record<string, string> = {}): Promise<TestResponse> {
    const form = new FormData();
    form.set('workspaceId', this.workspaceId);
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    for (const f of files) form.append('file', new Blob([f.bytes], { type: f.type ?? '' }), f.name);
    return this.rawUpload(baseId, form);
  }

  async rawUpload(baseId: string, form: FormData): Promise<TestResponse> {
    const res = await fetch(`${this.t.url}/api/v1/knowledge/${baseId}/documents`, { method: 'POST', body: form, headers: { 'x-api-key': this.key } });
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: res.status, headers: res.headers, body, text };
  }

  document(baseId: string, documentId: string): Promise<TestResponse> {
    return this.call('GET', `/api/v1/knowledge/${baseId}/documents/${documentId}?workspaceId=${this.workspaceId}`);
  }

  /** Polls a document until its processing ends; returns the document. */
  async processed(baseId: string, documentId: string, timeoutMs = 60_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await this.document(baseId, documentId);
      const status = r.body?.data?.document?.processingStatus;
      if (status === 'completed' || status === 'failed') return r.body.data.document;
      if (Date.now() > deadline) throw new Error(`document ${documentId} still ${status}: ${r.text}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  async chunks(baseId: string, documentId: string, query = ''): Promise<any> {
    const r = await this.call('GET', `/api/v1/knowledge/${baseId}/documents/${documentId}/chunks?workspaceId=${this.workspaceId}${query}`);
    if (r.status !== 200) throw new Error(`chunks: ${r.status} ${r.text}`);
    return r.body.data;
  }

  search(body: Record<string, unknown>): Promise<TestResponse> {
    return this.call('POST', '/api/v1/knowledge/search', { workspaceId: this.workspaceId, ...body });
  }
}

let counter = 0;
/** A second workspace with its own workspace key (foreign-id and plan tests). */
export async function otherWorkspace(t: TestServer, plan = 'free'): Promise<KnowledgeClient> {
  const ws = await createWorkspace(t.server.ctx.db, `kb-other-${process.pid}-${++counter}-${Date.now()}`, t.userId, plan);
  const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
  return new KnowledgeClient(t, ws.id, key.secret);
}

export const uniqueName = (prefix: string) => `${prefix} ${++counter} ${Math.random().toString(36).slice(2, 8)}`;

export const FAKE_EMBEDDING_DIMENSION = 64;

/** Bag of words hashed into FAKE_EMBEDDING_DIMENSION buckets: texts sharing words are close. */
export function fakeEmbedding(text: string): number[] {
  const v = new Array<number>(FAKE_EMBEDDING_DIMENSION).fill(0);
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 0;
    for (const ch of word) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    v[h % FAKE_EMBEDDING_DIMENSION] = (v[h % FAKE_EMBEDDING_DIMENSION] as number) + 1;
  }
  return v;
}

export interface FakeEmbeddings {
  /** Base URL for EMBEDDINGS_BASE_URL. */
  url: string;
  /** What the last request carried, and how many texts were embedded so far. */
  seen: { auth?: string; model?: string; inputs: number; requests: number; /** held requests the client gave up on */ abandoned: number };
  /** While true, requests are held unanswered (a provider that hangs). */
  hold: boolean;
  /** Answers the requests held so far, as if the provider had only been slow. */
  releaseHeld(): void;
  /** Called as each request arrives (after `seen` is counted): lets a test wait for one. */
  onRequest?: () => void;
  /** While true, requests answer 500 with an OpenAI-style error body (a provider that is down). */
  fail: boolean;
  close(): void;
}

/** A local server speaking OpenAI's embeddings wire format with `fakeEmbedding` vectors. */
export async function startFakeEmbeddings(): Promise<FakeEmbeddings> {
  const held: (() => void)[] = [];
  const fake: FakeEmbeddings = {
    url: '', seen: { inputs: 0, requests: 0, abandoned: 0 }, hold: false, fail: false, close: () => undefined,
    releaseHeld: () => {
      for (const answer of held.splice(0)) answer();
    },
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const parsed = JSON.parse(body) as { model: string; input: string[] };
      fake.seen.requests++;
      fake.onRequest?.();
      if (fake.hold) {
        held.push(() => answer(parsed));
        res.on('close', () => {
          if (!res.writableFinished) fake.seen.abandoned++;
        });
        return;
      }
      if (fake.fail) {
        res.statusCode = 500;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ error: { message: 'upstream is down', type: 'server_error' } }));
        return;
      }
      fake.seen.auth = req.headers.authorization;
      answer(parsed);
    });
    function answer(parsed: { model: string; input: string[] }): void {
      fake.seen.model = parsed.model;
      fake.seen.inputs += parsed.input.length;
      const tokens = parsed.input.reduce((n, t) => n + t.split(/\s+/).length, 0);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        object: 'list', model: parsed.model,
        data: parsed.input.map((t, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(t) })),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      }));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  fake.url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/v1`;
  fake.close = () => {
    server.closeAllConnections();
    server.close();
  };
  return fake;
}
