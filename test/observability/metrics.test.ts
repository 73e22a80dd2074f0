// GET /metrics over the whole server: HTTP by route pattern, runs, blocks, queue, AI, limits, database
// pool, and the optional bearer token. Runs on both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';
import { find, parseMetrics, total, type Sample } from './metrics-text.js';

const TOKEN = 'metrics-secret-token';
let t: TestServer;
let fake: FakeProviders;
let workflowId: string;

// Async bucket of the test's plan: 1 a minute, burst 2, so the third async execute is refused.
const limits = JSON.stringify({ enterprise: { asyncPerMinute: 1 } });

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startTestServer({
    // The suite runs with syncs off (vitest.config.ts); this server runs as `npm start` does, with them on.
    env: { ...fake.env, WEFT_METRICS_TOKEN: TOKEN, WEFT_PLAN_LIMITS: limits, WEFT_AI_STARTING_CREDITS_USD: '5', WEFT_EMBEDDED_FSYNC: 'on' },
  });
  workflowId = await deploy(t, 'metrics', {
    blocks: [
      start([{ name: 'n', type: 'number', default: 1 }]),
      fn('double', 'return { value: <start.n> * 2 }', 'Double'),
      { id: 'reply', type: 'response', name: 'Reply', config: { data: { value: '<double.value>' } } },
    ],
    edges: [{ from: 'start', to: 'double' }, { from: 'double', to: 'reply' }],
  });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function scrape(): Promise<Sample[]> {
  const r = await request(`${t.url}/metrics`, 'GET', undefined, { authorization: `Bearer ${TOKEN}` });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(r.text);
}

describe('GET /metrics', () => {
  it('wants the bearer token when WEFT_METRICS_TOKEN is set', async () => {
    const none = await request(`${t.url}/metrics`, 'GET');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(none.body).toEqual({ error: expect.stringContaining('WEFT_METRICS_TOKEN') });
    expect((await request(`${t.url}/metrics`, 'GET', undefined, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await request(`${t.url}/metrics`, 'GET', undefined, { 'x-api-key': t.apiKey })).status).toBe(401);
    expect((await request(`${t.url}/metrics`, 'GET', undefined, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });

  it('counts HTTP requests by route pattern and status, with latency buckets', async () => {
    const run = await t.call('POST', `/api/workflows/${workflowId}/execute`, { n: 21 });
    expect(run.status).toBe(200);
    expect((await t.call('GET', '/api/v1/workflows/wf_does_not_exist')).status).toBe(404);
    // Under /api: other unknown paths answer the dashboard's index.html (its client-side routes).
    expect((await t.call('GET', '/api/no/such/route')).status).toBe(404);
    const m = await scrape();
    const execute = { method: 'POST', route: '/api/workflows/:workflowId/execute', status: '200' };
    expect(total(m, 'weft_http_request_duration_seconds_count', execute)).toBeGreaterThanOrEqual(1);
    expect(find(m, 'weft_http_request_duration_seconds_bucket', { ...execute, le: '+Inf' })).toHaveLength(1);
    expect(find(m, 'weft_http_request_duration_seconds_bucket', execute).length).toBeGreaterThan(5);
    expect(total(m, 'weft_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/workflows/:id', status: '404' })).toBe(1);
    expect(total(m, 'weft_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    // Route patterns only: no raw ids or paths in labels.
    const routes = new Set(find(m, 'weft_http_request_duration_seconds_count').map((s) => s.labels.route));
    expect([...routes].some((r) => r?.includes(workflowId) || r?.includes('wf_does_not_exist') || r?.includes('/no/such'))).toBe(false);
  });

  it('counts runs by trigger, mode and status, with run and block durations and the queue wait', async () => {
    const before = await scrape();
    const sync = await t.call('POST', `/api/workflows/${workflowId}/execute`, { n: 2 });
    expect(sync.status).toBe(200);
    const queued = await t.call('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: 3 }, async: true });
    expect(queued.status).toBe(202);
    const job = await waitForJob(t, queued.body.taskId ?? queued.body.executionId);
    expect(job.status).toBe('completed');
    const m = await scrape();
    const delta = (name: string, labels: Record<string, string>) => total(m, name, labels) - total(before, name, labels);
    expect(delta('weft_runs_total', { trigger: 'api', mode: 'sync', status: 'completed' })).toBe(1);
    expect(delta('weft_runs_total', { trigger: 'api', mode: 'async', status: 'completed' })).toBe(1);
    expect(delta('weft_run_duration_seconds_count', { trigger: 'api', mode: 'async', status: 'completed' })).toBe(1);
    // start, double and reply in each run.
    expect(delta('weft_block_duration_seconds_count', { type: 'function', status: 'success' })).toBe(2);
    expect(delta('weft_block_duration_seconds_count', { type: 'response', status: 'success' })).toBe(2);
    expect(delta('weft_queue_wait_seconds_count', { trigger: 'api' })).toBe(1);
    expect(find(m, 'weft_queue_depth')).toEqual([expect.objectContaining({ value: 0 })]);
    // The runs loaded the deployed version and compiled it: both caches hold it, counted in bytes.
    for (const cache of ['versions', 'compiled']) {
      expect(total(m, 'weft_workflow_cache_entries', { cache }), cache).toBeGreaterThanOrEqual(1);
      expect(total(m, 'weft_workflow_cache_bytes', { cache }), cache).toBeGreaterThan(100);
    }
    expect(find(m, 'weft_workflow_cache_entries', { cache: 'rows' })).toHaveLength(1);
  });

  it('reports the database connections', async () => {
    const m = await scrape();
    const totalConns = find(m, 'weft_db_pool_connections', { state: 'total' })[0]?.value ?? 0;
    expect(totalConns).toBeGreaterThanOrEqual(1);
    expect(find(m, 'weft_db_pool_connections', { state: 'idle' })).toHaveLength(1);
    expect(find(m, 'weft_db_pool_waiting')).toHaveLength(1);
    if (t.server.ctx.db.mode === 'pglite') expect(totalConns).toBe(1);
  });

  it('reports how busy the embedded database thread was, growing with the work it did (embedded only)', async () => {
    const before = await scrape();
    if (t.server.ctx.db.mode !== 'pglite') {
      // PostgreSQL keeps its own statistics; the server reports no thread of its own.
      expect(find(before, 'weft_db_busy_seconds_total')).toEqual([]);
      expect(find(before, 'weft_db_statements_total')).toEqual([]);
      return;
    }
    for (let n = 0; n < 5; n++) {
      const r = await t.call('POST', `/api/workflows/${workflowId}/execute`, { n });
      expect(r.status).toBe(200);
    }
    const after = await scrape();
    // Each sync run writes its row (group-committed, but these five ran one after another).
    expect(total(after, 'weft_db_statements_total') - total(before, 'weft_db_statements_total')).toBeGreaterThanOrEqual(5);
    expect(total(after, 'weft_db_busy_seconds_total')).toBeGreaterThan(total(before, 'weft_db_busy_seconds_total'));
    // Counters never go back from one scrape to the next.
    const again = await scrape();
    expect(total(again, 'weft_db_busy_seconds_total')).toBeGreaterThanOrEqual(total(after, 'weft_db_busy_seconds_total'));
    expect(total(again, 'weft_db_statements_total')).toBeGreaterThanOrEqual(total(after, 'weft_db_statements_total'));
  });

  it('reports the files the embedded database synced: the commit of each answered run reached the disk (embedded only)', async () => {
    const before = await scrape();
    if (t.server.ctx.db.mode !== 'pglite') {
      expect(find(before, 'weft_db_file_syncs_total')).toEqual([]);
      return;
    }
    // PostgreSQL inside PGlite runs with fsync on and flushes its log with fsync(), the call that reaches the disk.
    const settings = await t.server.ctx.db.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'wal_sync_method') ORDER BY name");
    expect(settings).toEqual([{ name: 'fsync', setting: 'on' }, { name: 'wal_sync_method', setting: 'fsync' }]);
    for (let n = 0; n < 5; n++) {
      const r = await t.call('POST', `/api/workflows/${workflowId}/execute`, { n });
      expect(r.status).toBe(200);
    }
    const after = await scrape();
    // One after another, each run is its own commit, and each commit syncs the write-ahead log before the answer.
    expect(total(after, 'weft_db_file_syncs_total') - total(before, 'weft_db_file_syncs_total')).toBeGreaterThanOrEqual(5);
  });

  it('counts AI tokens and cost by model after a gateway call', async () => {
    fake.handler = () => ({ text: 'hi', usage: { prompt: 100, completion: 50 } });
    const before = await scrape();
    const r = await t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(200);
    const m = await scrape();
    const delta = (name: string, labels: Record<string, string>) => total(m, name, labels) - total(before, name, labels);
    expect(delta('weft_ai_tokens_total', { model: 'gpt-4o', kind: 'prompt' })).toBe(100);
    expect(delta('weft_ai_tokens_total', { model: 'gpt-4o', kind: 'completion' })).toBe(50);
    expect(delta('weft_ai_cost_usd_total', { model: 'gpt-4o' })).toBeCloseTo(Number(r.headers.get('x-credits-used')), 6);
    expect(delta('weft_ai_cost_usd_total', { model: 'gpt-4o' })).toBeGreaterThan(0);
  });

  it('counts limit rejections by kind after a 429', async () => {
    const before = total(await scrape(), 'weft_limit_rejections_total', { kind: 'rate' });
    let refused = 0;
    for (let i = 0; i < 4 && refused === 0; i++) {
      const r = await t.call('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: 1 }, async: true });
      if (r.status === 429) refused++;
      else expect(r.status).toBe(202);
    }
    expect(refused).toBe(1);
    expect(total(await scrape(), 'weft_limit_rejections_total', { kind: 'rate' }) - before).toBe(1);
  });

  it('exposes the process metrics', async () => {
    const m = await scrape();
    expect(find(m, 'process_cpu_user_seconds_total')).toHaveLength(1);
    expect(find(m, 'nodejs_eventloop_lag_seconds')).toHaveLength(1);
  });
});
