// The TypeScript client (clients/ts) against a live server, area by area: workflows, jobs, a human
// pause and resume, tables, knowledge, the AI gateway (plain and streamed), usage limits, keys, and
// typed errors. One server for the file; a local OpenAI-wire upstream answers the AI calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WeftApiError, WeftClient, WeftRunError, createWeftClient, unwrap, type ChatCompletionChunk } from '../../clients/ts/src/index.js';
import * as ledger from '../../src/ai/credit-ledger.js';
import { createKey, createWorkspace } from '../support/accounts.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

let t: TestServer;
let fake: FakeProviders;
let weft: WeftClient;

beforeAll(async () => {
  fake = await startFakeProviders();
  // The free plan (only the rate-limit test's workspace is on it) runs one sync execute a minute, burst two.
  t = await startTestServer({ env: { ...fake.env, WEFT_PLAN_LIMITS: JSON.stringify({ free: { syncPerMinute: 1 } }) } });
  weft = createWeftClient({ baseUrl: t.url, apiKey: t.apiKey });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const unique = (name: string) => `${name}_${Math.random().toString(36).slice(2, 8)}`;

const double = {
  blocks: [start([{ name: 'n', type: 'number', required: true }]), fn('twice', 'return { doubled: <start.n> * 2 }', 'Twice')],
  edges: [{ from: 'start', to: 'twice' }],
};

const approval = {
  blocks: [
    start([{ name: 'item', type: 'string' }]),
    { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Approve?', fields: [{ name: 'decision', type: 'string', required: true }] } },
    fn('after', 'return { item: <start.item>, decision: <approval.decision> }', 'After'),
  ],
  edges: [{ from: 'start', to: 'approval' }, { from: 'approval', to: 'after' }],
};

/** Creates and deploys a workflow through the client; returns its id. */
async function deployed(client: WeftClient, workspaceId: string, name: string, definition: unknown): Promise<string> {
  const created = await unwrap(client.api.POST('/api/v1/workflows', { body: { workspaceId, name, definition: definition as never } }));
  const id = created.data.workflow.id;
  await unwrap(client.api.POST('/api/v1/workflows/{id}/deploy', { params: { path: { id } } }));
  return id;
}

describe('workflows and jobs', () => {
  let wf: string;
  beforeAll(async () => {
    wf = await deployed(weft, t.workspaceId, unique('double'), double);
  });

  it('creates, deploys and reports the status of a workflow', async () => {
    const status = await unwrap(weft.api.GET('/api/workflows/{id}/status', { params: { path: { id: wf } } }));
    expect(status).toMatchObject({ isDeployed: true, needsRedeployment: false, version: 1 });
    const list = await unwrap(weft.api.GET('/api/v1/workflows', { params: { query: { workspaceId: t.workspaceId } } }));
    expect(list.data.map((w) => w.id)).toContain(wf);
  });

  it('executes synchronously', async () => {
    const run = await weft.execute<{ doubled: number }>(wf, { n: 21 });
    expect(run.status).toBe('completed');
    expect(run.output).toEqual({ doubled: 42 });
    expect(run.executionId).toBeTruthy();
    expect(run.pauses).toEqual([]);
    // The same through execute-and-wait in sync mode.
    expect((await weft.executeAndWait(wf, { n: 2 }, { mode: 'sync' })).output).toEqual({ doubled: 4 });
  });

  it('executes asynchronously and waits for the job', async () => {
    const run = await weft.executeAndWait<{ doubled: number }>(wf, { n: 5 }, { initialDelayMs: 20 });
    expect(run).toMatchObject({ status: 'completed', output: { doubled: 10 }, pauses: [] });
    expect((run.raw as { status: string }).status).toBe('completed');
  });

  it('queues a run, reads its job and polls it to the end', async () => {
    const queued = await weft.executeAsync(wf, { n: 1 }, { executionId: unique('exec') });
    expect(queued).toMatchObject({ success: true, async: true, status: 'queued' });
    expect(queued.executionId).toMatch(/^exec_/);
    const first = await weft.getJob(queued.jobId);
    expect(['queued', 'processing', 'completed']).toContain(first.status);
    const job = await weft.waitForJob(queued.jobId, { initialDelayMs: 20 });
    expect(job.status).toBe('completed');
    expect(job.metadata.executionId).toBe(queued.executionId);
    expect(job.output).toMatchObject({ success: true, output: { doubled: 2 } });
  });

  it('reports a failed run as WeftRunError, sync and async', async () => {
    const broken = await deployed(weft, t.workspaceId, unique('broken'), {
      blocks: [start(), fn('boom', 'throw new Error("no luck")', 'Boom')],
      edges: [{ from: 'start', to: 'boom' }],
    });
    for (const mode of ['sync', 'async'] as const) {
      const err = await weft.executeAndWait(broken, {}, { mode, initialDelayMs: 20 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WeftRunError);
      expect(err).toMatchObject({ status: 'failed', message: expect.stringContaining('no luck') });
      expect((err as WeftRunError).executionId).toBeTruthy();
    }
  });
});

describe('a human pause and its resume', () => {
  let wf: string;
  beforeAll(async () => {
    wf = await deployed(weft, t.workspaceId, unique('approve'), approval);
  });

  it('pauses a sync run and resumes it', async () => {
    const run = await weft.execute(wf, { item: 'laptop' });
    expect(run.status).toBe('paused');
    expect(run.pauses).toEqual([expect.objectContaining({ workflowId: wf, executionId: run.executionId, contextId: 'approval' })]);
    const done = await weft.resumeAndWait(run.pauses[0], { decision: 'yes' });
    expect(done).toMatchObject({ status: 'completed', output: { item: 'laptop', decision: 'yes' } });
  });

  it('pauses an async run, and waits for the queued resume', async () => {
    const run = await weft.executeAndWait(wf, { item: 'desk' }, { initialDelayMs: 20 });
    expect(run.status).toBe('paused');
    expect(run.pauses[0].contextId).toBe('approval');
    const answer = await weft.resume(run.pauses[0], { decision: 'ok' });
    expect('queued' in answer && answer.queued).toBe(true);
    const done = await weft.waitForRun('queued' in answer ? answer.jobId : '', { initialDelayMs: 20 });
    expect(done).toMatchObject({ status: 'completed', output: { item: 'desk', decision: 'ok' } });
  });

  it('refuses a second resume of the same pause with a 409', async () => {
    const run = await weft.execute(wf, { item: 'chair' });
    await weft.resume(run.pauses[0], { decision: 'first' });
    const err = await weft.resume(run.pauses[0], { decision: 'again' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeftApiError);
    expect((err as WeftApiError).status).toBe(409);
  });
});

describe('tables', () => {
  it('creates a table, inserts rows and queries them with a filter', async () => {
    const workspaceId = t.workspaceId;
    const created = await unwrap(weft.api.POST('/api/v1/tables', {
      body: { workspaceId, name: unique('people'), schema: { columns: [{ name: 'name', type: 'string', required: true }, { name: 'age', type: 'number' }] } },
    }));
    const tableId = created.data.table.id;
    await unwrap(weft.api.POST('/api/v1/tables/{tableId}/rows', {
      params: { path: { tableId } },
      body: { workspaceId, rows: [{ name: 'Ada', age: 36 }, { name: 'Alan', age: 41 }, { name: 'Grace', age: 29 }] },
    }));
    const page = await unwrap(weft.api.GET('/api/v1/tables/{tableId}/rows', {
      params: { path: { tableId }, query: { workspaceId, filter: JSON.stringify({ age: { $gte: 30 } }), sort: JSON.stringify({ age: 'desc' }) } },
    }));
    expect(page.data.rows.map((r) => r.data.name)).toEqual(['Alan', 'Ada']);
    expect(page.data.totalCount).toBe(2);
  });
});

describe('knowledge', () => {
  it('creates a base, uploads text, waits for processing and searches', async () => {
    const workspaceId = t.workspaceId;
    const base = await unwrap(weft.api.POST('/api/v1/knowledge', { body: { workspaceId, name: unique('Handbook') } }));
    const kb = base.data.knowledgeBase.id;
    const docs: Record<string, string> = {
      'bread.md': '# Baking bread\n\nMix flour, water, salt and yeast, let the dough rise overnight, then bake it in a hot oven for forty minutes.',
      'vacation.md': '# Vacation policy\n\nEmployees receive 25 days of paid leave per year, approved by their manager two weeks in advance.',
    };
    const ids: string[] = [];
    for (const [filename, content] of Object.entries(docs)) {
      const up = await unwrap(weft.api.POST('/api/v1/knowledge/{id}/documents', { params: { path: { id: kb } }, body: { workspaceId, filename, content } }));
      ids.push(up.data.document!.id);
    }
    for (const id of ids) {
      const doc = await weft.waitForDocument(kb, id, workspaceId, { initialDelayMs: 50, timeoutMs: 120_000 });
      expect(doc.processingStatus).toBe('completed');
      expect(doc.chunkCount).toBeGreaterThan(0);
    }
    const found = await unwrap(weft.api.POST('/api/v1/knowledge/search', { body: { workspaceId, knowledgeBaseIds: kb, query: 'how many days of holiday do I get?', topK: 1 } }));
    expect(found.data.results[0].documentName).toBe('vacation.md');
    expect(found.data.results[0].similarity).toBeGreaterThan(0);
  });
});

describe('the AI gateway', () => {
  const messages = [{ role: 'user' as const, content: 'hi' }];
  beforeAll(async () => {
    const account = `workspace:${t.workspaceId}`;
    await ledger.ensureAccount(t.server.ctx.db, account, 0);
    await ledger.grant(t.server.ctx.db, account, ledger.usdToNano(10), 'test');
  });

  it('answers a chat completion', async () => {
    fake.handler = () => ({ text: 'Hello there', usage: { prompt: 10, completion: 3 } });
    const c = await weft.chatCompletion({ model: 'gpt-4o-mini', messages });
    expect(c.object).toBe('chat.completion');
    expect(c.choices[0].message.content).toBe('Hello there');
    expect(c.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 });
  });

  it('streams a chat completion as an async iterator of chunks', async () => {
    fake.handler = () => ({ text: 'one two three four', usage: { prompt: 11, completion: 4 }, pieces: 4 });
    const stream = await weft.streamChatCompletion({ model: 'gpt-4o-mini', messages, stream_options: { include_usage: true } });
    expect(stream.requestId).toBeTruthy();
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('one two three four');
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 4 });
    expect(fake.requests.at(-1)?.body.stream).toBe(true);
  });

  it('throws a provider failure in the middle of a stream as WeftApiError', async () => {
    fake.handler = () => ({ text: 'one two three four', pieces: 4, failAfterPieces: 2 });
    const stream = await weft.streamChatCompletion({ model: 'gpt-4o-mini', messages });
    let text = '';
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((e: unknown) => e);
    // Two of four pieces arrived before the failure.
    expect(text.length).toBeGreaterThan(0);
    expect('one two three four'.startsWith(text) && text !== 'one two three four').toBe(true);
    expect(err).toBeInstanceOf(WeftApiError);
    expect((err as WeftApiError).status).toBe(502);
  });

  it('closes a stream that is not read', async () => {
    fake.handler = () => ({ text: 'one two three four', pieces: 4, pieceDelayMs: 200 });
    const stream = await weft.streamChatCompletion({ model: 'gpt-4o-mini', messages });
    await stream.cancel();
    await expect.poll(() => fake.openStreams, { timeout: 10_000 }).toBe(0);
  });

  it('refuses an unknown model before streaming', async () => {
    const err = await weft.streamChatCompletion({ model: 'no-such-model', messages }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeftApiError);
    expect((err as WeftApiError).status).toBe(404);
    expect((err as WeftApiError).code).toBeTruthy();
  });
});

describe('usage limits and keys', () => {
  it('reads the usage limits', async () => {
    const limits = await unwrap(weft.api.GET('/api/users/me/usage-limits'));
    expect(limits.success).toBe(true);
    expect(limits.rateLimit.sync.limit).toBeGreaterThan(0);
    expect(typeof limits.usage.currentPeriodCost).toBe('number');
    expect(limits.storage.limitBytes).toBeGreaterThan(0);
  });

  it('creates a key, uses it, lists and revokes it', async () => {
    const name = unique('ci');
    const created = await unwrap(weft.api.POST('/api/v1/keys', { body: { workspaceId: t.workspaceId, name } }));
    const secret = created.data.key;
    const other = new WeftClient({ baseUrl: t.url, apiKey: secret });
    const list = await unwrap(other.api.GET('/api/v1/keys', { params: { query: { workspaceId: t.workspaceId } } }));
    expect(list.data.keys.map((k) => k.name)).toContain(name);
    await unwrap(weft.api.DELETE('/api/v1/keys/{id}', { params: { path: { id: created.data.id } } }));
    const err = await unwrap(other.api.GET('/api/users/me/usage-limits')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeftApiError);
    expect((err as WeftApiError).status).toBe(401);
  });
});

describe('secrets', () => {
  it('sets, lists (names only), deletes; a workflow references the secret', async () => {
    const name = unique('CLIENT_TOKEN').toUpperCase();
    const set = await unwrap(weft.api.PUT('/api/v1/secrets/{name}', { params: { path: { name } }, body: { workspaceId: t.workspaceId, value: 'client-secret-value' } }));
    expect(set.data).toEqual({ name, created: true });
    const list = await unwrap(weft.api.GET('/api/v1/secrets', { params: { query: { workspaceId: t.workspaceId } } }));
    expect(list.data.secrets.map((x) => x.name)).toContain(name);
    expect(JSON.stringify(list)).not.toContain('client-secret-value');
    const deleted = await unwrap(weft.api.DELETE('/api/v1/secrets/{name}', { params: { path: { name }, query: { workspaceId: t.workspaceId } } }));
    expect(deleted.data.usedBy).toEqual([]);
  });
});

describe('typed errors', () => {
  it('404 with its code and the request id', async () => {
    const err = await weft.getJob('job-that-does-not-exist').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeftApiError);
    const e = err as WeftApiError;
    expect(e.status).toBe(404);
    expect(e.message).toBeTruthy();
    expect(e.requestId).toBeTruthy();
    // A caller's X-Request-Id comes back in the error.
    const mine = new WeftClient({ baseUrl: t.url, apiKey: t.apiKey, headers: { 'x-request-id': 'trace-me-123' } });
    const again = await mine.getJob('job-that-does-not-exist').catch((x: unknown) => x);
    expect((again as WeftApiError).requestId).toBe('trace-me-123');
  });

  it('400 with validation details', async () => {
    const err = await unwrap(weft.api.POST('/api/v1/tables', { body: { workspaceId: t.workspaceId, name: 'bad name!', schema: { columns: [] } } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeftApiError);
    const e = err as WeftApiError;
    expect(e.status).toBe(400);
    expect(Array.isArray(e.details)).toBe(true);
    expect((e.details as unknown[]).length).toBeGreaterThan(0);
  });

  it('401 for a wrong key', async () => {
    const stranger = new WeftClient({ baseUrl: t.url, apiKey: 'wk_not_a_key' });
    const err = await stranger.execute('anything').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeftApiError);
    expect((err as WeftApiError).status).toBe(401);
  });

  it('429 with retryAfter', async () => {
    const ws = await createWorkspace(t.server.ctx.db, unique('limited'), t.userId, 'free');
    const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
    const limited = new WeftClient({ baseUrl: t.url, apiKey: key.secret });
    const wf = await deployed(limited, ws.id, 'double', double);
    const errors: unknown[] = [];
    for (let i = 0; i < 3; i++) await limited.execute(wf, { n: i }).catch((e: unknown) => errors.push(e));
    expect(errors).toHaveLength(1);
    const e = errors[0] as WeftApiError;
    expect(e).toBeInstanceOf(WeftApiError);
    expect(e.status).toBe(429);
    expect(e.retryAfter).toBeGreaterThanOrEqual(1);
    expect(e.retryAfter).toBeLessThanOrEqual(60);
  });
});
