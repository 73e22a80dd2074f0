// The logs API read as clients of the reference service read it: its filters (triggers, execution id,
// duration, dates as plain dates, folders), both orders, a limit clamped rather than refused, details=full
// with each log's workflow, final output and trace spans (a page of them bounded in bytes), the detail's
// executionData, and the snapshot of the workflow a run ran (credentials redacted).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createUser, createWorkspace } from '../support/accounts.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';
import { LOG_PAGE_MAX_DATA_BYTES } from '../../src/runs/log-routes.js';

let t: TestServer;
let workflowId: string;
const runs: string[] = [];

beforeAll(async () => {
  t = await startTestServer();
  workflowId = await deploy(t, 'logs-api', {
    blocks: [start([{ name: 'n', type: 'number' }]), fn('double', 'return { doubled: <start.n> * 2 }', 'Double')],
    edges: [{ from: 'start', to: 'double' }],
  });
  // Three API runs and one async run, oldest first.
  for (let n = 1; n <= 3; n++) {
    const r = await t.call('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n } });
    expect(r.status, r.text).toBe(200);
    runs.push(r.body.executionId);
  }
  const queued = await t.call('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: 4 }, async: true });
  expect(queued.status, queued.text).toBe(202);
  await waitForJob(t, queued.body.taskId);
  runs.push(queued.body.executionId);
});
afterAll(async () => {
  await t?.close();
});

const logs = (query: string) => t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowIds=${workflowId}&${query}`);
const ids = (r: { body: { data: { executionId: string }[] } }) => r.body.data.map((l) => l.executionId);

describe('GET /api/v1/logs, as the reference reads it', () => {
  it('pages newest first by default and oldest first with order=asc; a cursor keeps its direction', async () => {
    const desc = await logs('limit=3');
    expect(desc.status, desc.text).toBe(200);
    expect(ids(desc)).toEqual([...runs].reverse().slice(0, 3));
    const asc = await logs('order=asc&limit=3');
    expect(ids(asc)).toEqual(runs.slice(0, 3));
    const rest = await logs(`order=asc&limit=3&cursor=${encodeURIComponent(asc.body.nextCursor)}`);
    expect(ids(rest)).toEqual(runs.slice(3));
    expect(rest.body.nextCursor).toBeUndefined();
    // A cursor read the other way is refused, as the reference refuses it.
    const crossed = await logs(`limit=3&cursor=${encodeURIComponent(asc.body.nextCursor)}`);
    expect(crossed.status).toBe(400);
    expect(crossed.body.error).toBe('Invalid cursor');
    expect((await logs(`order=asc&cursor=${encodeURIComponent(desc.body.nextCursor)}`)).status).toBe(400);
  });

  it('clamps limit to 1..1000 instead of refusing it; a limit that is no number is a 400', async () => {
    const big = await logs('limit=5000');
    expect(big.status, big.text).toBe(200);
    expect(big.body.data).toHaveLength(4);
    const zero = await logs('limit=0');
    expect(zero.status).toBe(200);
    expect(zero.body.data).toHaveLength(1);
    expect((await logs('limit=2.9')).body.data).toHaveLength(2);
    const word = await logs('limit=many');
    expect(word.status).toBe(400);
    expect(word.body.error).toMatch(/limit/);
  });

  it('filters by triggers (a comma list; all: any), by execution id and by duration', async () => {
    expect(ids(await logs('triggers=api'))).toHaveLength(4);
    expect(ids(await logs('triggers=webhook,schedule'))).toEqual([]);
    expect(ids(await logs('triggers=all'))).toHaveLength(4);
    expect(ids(await logs('trigger=webhook'))).toEqual([]);
    expect(ids(await logs(`executionId=${runs[1]}`))).toEqual([runs[1]]);
    expect(ids(await logs('executionId=no-such-run'))).toEqual([]);
    const all = (await logs('limit=10')).body.data as { executionId: string; totalDurationMs: number }[];
    const longest = Math.max(...all.map((l) => l.totalDurationMs));
    expect(ids(await logs(`minDurationMs=${longest}`))).toEqual(all.filter((l) => l.totalDurationMs >= longest).map((l) => l.executionId));
    expect(ids(await logs(`maxDurationMs=${longest}`))).toHaveLength(4);
    expect(ids(await logs(`minDurationMs=${longest + 60_000}`))).toEqual([]);
    const negative = await logs('minDurationMs=-1');
    expect(negative.status).toBe(400);
    expect(negative.body.error).toMatch(/minDurationMs/);
  });

  it('reads dates as ISO dates or timestamps; a folder filter matches nothing (Weft has no folders)', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect(ids(await logs(`startDate=${today}`))).toHaveLength(4);
    expect(ids(await logs(`startDate=${tomorrow}`))).toEqual([]);
    expect(ids(await logs(`endDate=${today}`))).toEqual([]);
    expect(ids(await logs(`startDate=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}`))).toHaveLength(4);
    const bad = await logs('startDate=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/startDate/);
    expect(ids(await logs('folderIds=f1,f2'))).toEqual([]);
    expect(ids(await logs('folderIds='))).toHaveLength(4);
  });

  it('details=full adds the workflow, and with its flags the final output and trace spans', async () => {
    const basic = await logs('limit=1&includeFinalOutput=true');
    expect(basic.body.data[0].workflow).toBeUndefined();
    expect(basic.body.data[0].finalOutput).toBeUndefined();
    expect(basic.body.data[0].files).toBeNull();

    const full = await logs('limit=1&details=full');
    expect(full.body.data[0].workflow).toEqual({ id: workflowId, name: 'logs-api', description: '', deleted: false });
    expect(full.body.data[0].traceSpans).toBeUndefined();

    const data = await logs('order=asc&limit=2&details=full&includeFinalOutput=1&includeTraceSpans=true');
    expect(data.status, data.text).toBe(200);
    const [first] = data.body.data;
    expect(first.finalOutput).toEqual({ doubled: 2 });
    expect(first.traceSpans.map((s: { blockId: string }) => s.blockId)).toEqual(['start', 'double']);
    const span = first.traceSpans[1];
    expect(span).toMatchObject({ id: 'double', name: 'Double', type: 'function', status: 'success', output: { doubled: 2 } });
    expect(Date.parse(span.endTime) - Date.parse(span.startTime)).toBe(span.duration);
    expect((await logs('details=full&includeTraceSpans=maybe')).status).toBe(400);
  });

  it("names a deleted workflow's runs 'Deleted Workflow'", async () => {
    const gone = await deploy(t, 'logs-api-gone', { blocks: [start(), fn('f', 'return 1')], edges: [{ from: 'start', to: 'f' }] });
    const run = await t.call('POST', `/api/workflows/${gone}/execute`, {});
    expect((await t.call('DELETE', `/api/v1/workflows/${gone}`)).status).toBe(200);
    const r = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&executionId=${run.body.executionId}&details=full`);
    expect(r.body.data[0].workflow).toEqual({ id: gone, name: 'Deleted Workflow', description: null, deleted: true });
  });
});

describe('a page of final outputs', () => {
  it(`holds at most ${LOG_PAGE_MAX_DATA_BYTES / 1024 / 1024} MiB of them (its first log whatever its size) and continues from a cursor`, async () => {
    const big = await deploy(t, 'logs-api-big', {
      blocks: [start(), fn('big', "return { text: 'x'.repeat(3 * 1024 * 1024) }")],
      edges: [{ from: 'start', to: 'big' }],
    });
    for (let i = 0; i < 4; i++) expect((await t.call('POST', `/api/workflows/${big}/execute`, {})).status).toBe(200);
    const pageOf = (cursor?: string) => t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${big}&details=full&includeFinalOutput=true&limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    const seen: number[] = [];
    let cursor: string | undefined;
    do {
      const r = await pageOf(cursor);
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      for (const l of r.body.data) expect(l.finalOutput.text).toHaveLength(3 * 1024 * 1024);
      seen.push(r.body.data.length);
      cursor = r.body.nextCursor;
    } while (cursor);
    // Two outputs of 3 MiB fit in 8 MiB, a third does not.
    expect(seen).toEqual([2, 2]);
    // Without outputs the same page holds all four.
    expect((await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${big}&details=full`)).body.data).toHaveLength(4);
  });
});

describe('GET /api/v1/logs/{id}', () => {
  it("adds the workflow and the reference's executionData: trace spans and final output", async () => {
    const r = await t.call('GET', `/api/v1/logs/${runs[2]}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.workflow).toMatchObject({ id: workflowId, name: 'logs-api', deleted: false });
    expect(r.body.data.executionData.finalOutput).toEqual({ doubled: 6 });
    expect(r.body.data.executionData.traceSpans.map((s: { id: string }) => s.id)).toEqual(r.body.data.trace.map((e: { key: string }) => e.key));
    expect(r.body.limits.usage).toBeDefined();
  });
});

describe('GET /api/v1/logs/executions/{executionId}', () => {
  it('answers the workflow as the run ran it, credentials typed into settings redacted, with timing and cost', async () => {
    expect((await t.call('PUT', '/api/v1/secrets/VENDOR_KEY', { workspaceId: t.workspaceId, value: 'stored-secret-value' })).status).toBe(201);
    const secretful = await deploy(t, 'logs-api-snapshot', {
      variables: { apiToken: 'typed-in-variable-token', region: 'eu' },
      blocks: [
        start(),
        {
          id: 'call', type: 'http', name: 'Call',
          config: {
            url: 'http://127.0.0.1:9/x', method: 'GET',
            headers: { Authorization: 'Bearer typed-in-token', 'X-Api-Key': '{{VENDOR_KEY}}', Accept: 'application/json' },
            query: { api_key: 'sk-typed-in', page: '1' },
          },
        },
      ],
      edges: [{ from: 'start', to: 'call' }],
    });
    // The deployed version runs (its call is refused: loopback), then the draft changes: the snapshot is what ran.
    const run = await t.call('POST', `/api/workflows/${secretful}/execute`, {});
    expect(run.body.executionId, run.text).toEqual(expect.any(String));
    expect((await t.call('PUT', `/api/v1/workflows/${secretful}`, { definition: { blocks: [start()], edges: [] } })).status).toBe(200);

    const r = await t.call('GET', `/api/v1/logs/executions/${run.body.executionId}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.executionId).toBe(run.body.executionId);
    expect(r.body.workflowId).toBe(secretful);
    const call = r.body.workflowState.blocks.find((b: { id: string }) => b.id === 'call');
    expect(call.config.headers).toEqual({ Authorization: '[REDACTED]', 'X-Api-Key': '{{VENDOR_KEY}}', Accept: 'application/json' });
    expect(call.config.query).toEqual({ api_key: '[REDACTED]', page: '1' });
    expect(call.config.url).toBe('http://127.0.0.1:9/x');
    expect(r.body.workflowState.variables).toEqual({ apiToken: '[REDACTED]', region: 'eu' });
    expect(JSON.stringify(r.body)).not.toMatch(/typed-in/);
    expect(r.body.executionMetadata).toMatchObject({ trigger: 'api', totalDurationMs: expect.any(Number) });
    expect(r.body.limits).toBeDefined();
  });

  it("is a 404 for an unknown run, another workspace's run, and a run whose workflow was deleted", async () => {
    const unknown = await t.call('GET', '/api/v1/logs/executions/no-such-run');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('Workflow execution not found');

    const db = t.server.ctx.db;
    const owner = await createUser(db, 'logs-api-other@example.com');
    const other = await createWorkspace(db, 'logs-api-other', owner.id);
    const otherKey = (await createKey(db, { workspaceId: other.id, userId: owner.id, type: 'workspace' })).secret;
    const foreign = await t.call('GET', `/api/v1/logs/executions/${runs[0]}`, undefined, { 'x-api-key': otherKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('Workflow execution not found');
    expect((await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&executionId=${runs[0]}`, undefined, { 'x-api-key': otherKey })).status).toBe(403);

    const gone = await deploy(t, 'logs-api-snapshot-gone', { blocks: [start()], edges: [] });
    const run = await t.call('POST', `/api/workflows/${gone}/execute`, {});
    expect((await t.call('DELETE', `/api/v1/workflows/${gone}`)).status).toBe(200);
    const snapshot = await t.call('GET', `/api/v1/logs/executions/${run.body.executionId}`);
    expect(snapshot.status).toBe(404);
    expect(snapshot.body.error).toBe('Workflow state snapshot not found');
  });
});
