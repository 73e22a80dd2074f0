import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { ensureBootstrap } from '../support/accounts.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { freshDatabase, startTestServer, type TestServer } from '../support/harness.js';
import { runCli } from '../support/cli.js';
import { deploy, waitForJob } from '../support/workflows.js';

/**
 * The example workflows deploy with the CLI or over HTTP and run through the API, sync and async. Two deploy
 * with the CLI (each command is a process that opens the database: seconds on a loaded machine), the rest over
 * HTTP once the server runs, as the README's curl walk-through does; both take the same file.
 */
const examples = ['child-greeter', 'parent-workflow'];
const overHttp = ['condition-branch', 'foreach-loop', 'parallel-http', 'response-block', 'human-approval', 'table-signups', 'support-agent', 'http-post'];
const ids: Record<string, string> = {};
let t: TestServer;
let upstream: http.Server;
let upstreamUrl: string;
let fake: FakeProviders;
const posted: { source: string | undefined; body: unknown }[] = [];
const readExample = (name: string): { definition: unknown } => {
  const { name: _n, description: _d, ...definition } = JSON.parse(fs.readFileSync(path.resolve('examples', `${name}.json`), 'utf8'));
  return { definition };
};

beforeAll(async () => {
  const where = await freshDatabase();
  const env = { WEFT_DATA_DIR: where.dataDir, DATABASE_URL: where.databaseUrl };
  const db = await connectDatabase({ dataDir: where.dataDir ?? '', databaseUrl: where.databaseUrl });
  await ensureBootstrap(db, 'enterprise');
  await db.close();
  for (const name of examples) {
    const r = await runCli(['workflows', 'deploy', path.resolve('examples', `${name}.json`), '--workspace', 'default', '--json'], env);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.version).toBe(1);
    ids[name] = out.workflowId;
  }
  // Deploying again updates the same workflow and makes version 2.
  const again = await runCli(['workflows', 'deploy', path.resolve('examples', 'child-greeter.json'), '--workspace', 'default', '--json'], env);
  expect(JSON.parse(again.stdout)).toEqual({ workflowId: ids['child-greeter'], version: 2 });
  // The agent example reaches its model through the gateway: a local server speaking OpenAI's wire format.
  fake = await startFakeProviders();
  t = await startTestServer({
    reuse: where,
    env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_DEFAULT_PLAN: 'enterprise', WEFT_AI_STARTING_CREDITS_USD: '5', ...fake.env },
  });
  upstream = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    const url = new URL(req.url ?? '/', 'http://upstream');
    if (url.pathname === '/orders') {
      res.end(JSON.stringify({ orderId: url.searchParams.get('orderId'), status: 'shipped', shippedOn: '2025-03-02' }));
      return;
    }
    if (url.pathname === '/broken') {
      res.statusCode = 503;
      res.end(JSON.stringify({ error: 'down for maintenance' }));
      return;
    }
    if (req.method === 'POST') {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        posted.push({ source: req.headers['x-source'] as string | undefined, body: JSON.parse(text) });
        res.end(JSON.stringify({ received: true }));
      });
      return;
    }
    res.end(JSON.stringify({ path: req.url }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const addr = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  for (const name of overHttp) ids[name] = await deploy(t, name, readExample(name).definition);
}, 180_000);

afterAll(async () => {
  await t?.close();
  upstream?.close();
  await fake?.close();
});

async function both(name: string, inputs: Record<string, unknown>) {
  const sync = await t.call('POST', `/api/workflows/${ids[name]}/execute`, { inputs });
  const queued = await t.call('POST', `/api/workflows/${ids[name]}/execute`, { inputs, async: true });
  expect(queued.status).toBe(202);
  const job = await waitForJob(t, queued.body.jobId);
  return { sync, job };
}

describe('examples', () => {
  it('condition-branch takes the branch the score selects', async () => {
    const high = await both('condition-branch', { score: 80 });
    expect(high.sync.body.output).toEqual({ verdict: 'high', score: 80 });
    expect(high.job.output.output).toEqual({ verdict: 'high', score: 80 });
    const low = await both('condition-branch', { score: 3 });
    expect(low.sync.body.output).toEqual({ verdict: 'low', score: 3 });
  });

  it('foreach-loop doubles each item', async () => {
    const { sync, job } = await both('foreach-loop', { numbers: [1, 2, 3] });
    expect(sync.body.output).toEqual({ doubled: [2, 4, 6], total: 12 });
    expect(job.output.output).toEqual({ doubled: [2, 4, 6], total: 12 });
  });

  it('parallel-http fetches in parallel and keeps the order', async () => {
    const urls = ['/one', '/two', '/three'].map((p) => upstreamUrl + p);
    const { sync, job } = await both('parallel-http', { urls });
    expect(sync.body.output).toEqual({ statuses: [200, 200, 200], bodies: [{ path: '/one' }, { path: '/two' }, { path: '/three' }] });
    expect(job.status).toBe('completed');
  });

  it('parent-workflow runs the child workflow', async () => {
    const { sync, job } = await both('parent-workflow', { childWorkflowId: ids['child-greeter'], who: 'ada' });
    expect(sync.body.output).toEqual({ shouted: 'HELLO ADA' });
    expect(job.output.output).toEqual({ shouted: 'HELLO ADA' });
  });

  it('response-block answers with its status, header and body', async () => {
    const { sync, job } = await both('response-block', { item: { sku: 'x1' } });
    expect(sync.status).toBe(201);
    expect(sync.headers.get('x-weft-example')).toBe('response-block');
    expect(sync.body).toEqual({ created: { sku: 'x1', accepted: true } });
    expect(job.output.output.data).toEqual({ created: { sku: 'x1', accepted: true } });
  });

  it('every file in examples/ is deployed and run by this suite', () => {
    const files = fs.readdirSync('examples').filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort();
    expect(files).toEqual([...examples, ...overHttp].sort());
  });

  it('human-approval pauses for a person and branches on the answer', async () => {
    const wf = ids['human-approval'];
    const outcomes: unknown[] = [];
    for (const approved of [true, false]) {
      const run = await t.call('POST', `/api/workflows/${wf}/execute`, { inputs: { item: 'laptop', amount: 1200 } });
      expect(run.status).toBe(200);
      const links = run.body.output.data._resume;
      expect(run.body.output.data.message).toBe('Approve this purchase?');
      expect(links.apiUrl).toBe(`${t.url}/api/resume/${wf}/${run.body.executionId}/approval`);
      const resumed = await t.call('POST', `/api/resume/${wf}/${run.body.executionId}/approval`, { input: { approved, comment: 'ok by finance' } });
      expect(resumed.status).toBe(200);
      expect(resumed.body.status).toBe('completed');
      outcomes.push(resumed.body.output);
    }
    expect(outcomes).toEqual([
      { status: 'ordered', item: 'laptop', amount: 1200, comment: 'ok by finance' },
      { status: 'declined', item: 'laptop', comment: 'ok by finance' },
    ]);
  });

  it('table-signups upserts by the unique email and counts the plan', async () => {
    const created = await t.call('POST', '/api/v1/tables', {
      workspaceId: t.workspaceId, name: 'signups',
      schema: { columns: [{ name: 'email', type: 'string', unique: true, required: true }, { name: 'plan', type: 'select', options: ['free', 'pro'] }] },
    });
    expect(created.status, created.text).toBe(200);
    const tableId = created.body.data.table.id;
    const { sync, job } = await both('table-signups', { tableId, email: 'ada@example.com', plan: 'pro' });
    expect(sync.body.output).toEqual({ operation: 'insert', plan: 'pro', signups: 1, emails: ['ada@example.com'] });
    expect(job.output.output).toEqual({ operation: 'update', plan: 'pro', signups: 1, emails: ['ada@example.com'] });
    const other = await t.call('POST', `/api/workflows/${ids['table-signups']}/execute`, { inputs: { tableId, email: 'bob@example.com', plan: 'pro' } });
    expect(other.body.output).toEqual({ operation: 'insert', plan: 'pro', signups: 2, emails: ['ada@example.com', 'bob@example.com'] });
  });

  it('support-agent calls its HTTP tool through the gateway and answers with the result', async () => {
    fake.handler = (req) => {
      const toolMessage = (req.body.messages as { role: string; content: string }[]).find((m) => m.role === 'tool');
      if (!toolMessage) return { toolCalls: [{ id: 'call_1', name: 'order_status', arguments: { orderId: 'A17' } }], usage: { prompt: 120, completion: 20 } };
      const order = JSON.parse(toolMessage.content);
      return { text: `Order ${order.orderId} is ${order.status} (${order.shippedOn}).`, usage: { prompt: 160, completion: 15 } };
    };
    const before = fake.requests.length;
    const { sync, job } = await both('support-agent', { question: 'Where is my order A17?', ordersApi: `${upstreamUrl}/orders` });
    expect(sync.body.output).toEqual({ answer: 'Order A17 is shipped (2025-03-02).', toolsUsed: ['order_status'], tokens: 315 });
    expect(job.output.output).toEqual(sync.body.output);
    const sent = fake.requests.slice(before);
    expect(sent).toHaveLength(4);
    expect(sent[0].path).toBe('/openai/v1/chat/completions');
    expect(sent[0].body.model).toBe('gpt-4o-mini');
    expect(sent[0].body.tools[0].function.name).toBe('order_status');
  });

  it('http-post delivers the payload, and an error status goes to the error edge', async () => {
    const { sync, job } = await both('http-post', { url: `${upstreamUrl}/hooks`, payload: { id: 7, note: 'hi' } });
    expect(sync.body.output).toEqual({ delivered: true, status: 200, answer: { received: true } });
    expect(job.output.output).toEqual(sync.body.output);
    expect(posted.slice(-2)).toEqual([{ source: 'weft-example', body: { id: 7, note: 'hi' } }, { source: 'weft-example', body: { id: 7, note: 'hi' } }]);
    const failed = await t.call('POST', `/api/workflows/${ids['http-post']}/execute`, { inputs: { url: `${upstreamUrl}/broken` } });
    expect(failed.body.success).toBe(true);
    expect(failed.body.output).toEqual({ delivered: false, error: `HTTP 503 from POST ${upstreamUrl}/broken: {"error":"down for maintenance"}` });
  });
});
