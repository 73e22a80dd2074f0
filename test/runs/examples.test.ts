import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { ensureBootstrap } from '../support/accounts.js';
import { freshDatabase, startTestServer, type TestServer } from '../support/harness.js';
import { runCli } from '../support/cli.js';
import { waitForJob } from '../support/workflows.js';

/** The example workflows deploy with the CLI and run through the API, sync and async. */
const examples = ['condition-branch', 'foreach-loop', 'parallel-http', 'child-greeter', 'parent-workflow', 'response-block'];
const ids: Record<string, string> = {};
let t: TestServer;
let upstream: http.Server;
let upstreamUrl: string;

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
  t = await startTestServer({ reuse: where, env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_DEFAULT_PLAN: 'enterprise' } });
  upstream = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const addr = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}, 180_000);

afterAll(async () => {
  await t?.close();
  upstream?.close();
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
});
