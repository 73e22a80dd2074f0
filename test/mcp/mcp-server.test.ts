// The MCP server at /api/mcp/{workspaceId}, driven by the official SDK's own client over streamable HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
const ids: Record<string, string> = {};
const clients: Client[] = [];

async function create(name: string, definition: unknown, opts: { description?: string; deploy?: boolean } = {}): Promise<string> {
  const created = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name, description: opts.description, definition });
  if (created.status !== 201) throw new Error(`create failed ${created.status}: ${created.text}`);
  const id: string = created.body.data.workflow.id;
  if (opts.deploy !== false) {
    const dep = await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    if (dep.status !== 200) throw new Error(`deploy failed ${dep.status}: ${dep.text}`);
  }
  return id;
}

async function connect(workspaceId = t.workspaceId, headers: Record<string, string> = { 'x-api-key': t.apiKey }): Promise<Client> {
  const client = new Client({ name: 'weft-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/api/mcp/${workspaceId}`), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

async function runCount(workflowId: string): Promise<number> {
  const r = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${workflowId}`);
  expect(r.status).toBe(200);
  return r.body.data.length;
}

const triage = {
  blocks: [
    start([
      { name: 'ticket', type: 'string', required: true },
      { name: 'priority', type: 'number' },
      { name: 'tags', type: 'array' },
      { name: 'notify', type: 'boolean', required: true, default: false },
    ]),
    fn('answer', 'return { summary: <start.ticket>.toUpperCase(), priority: <start.priority>, tags: <start.tags>, notify: <start.notify> }'),
  ],
  edges: [{ from: 'start', to: 'answer' }],
};

beforeAll(async () => {
  t = await startTestServer();
  ids.triage = await create('Triage: Ticket', triage, { description: 'Summarizes a support ticket.' });
  ids.twin = await create('triage ticket', { blocks: [start(), fn('echo', 'return <start>')], edges: [{ from: 'start', to: 'echo' }] });
  ids.draft = await create('Draft only', { blocks: [start(), fn('x', 'return 1')], edges: [{ from: 'start', to: 'x' }] }, { deploy: false });
  ids.slow = await create('Slow', {
    blocks: [start(), { id: 'pause', type: 'wait', name: 'Pause', config: { seconds: 1.5 } }, fn('done', 'return { done: true }')],
    edges: [{ from: 'start', to: 'pause' }, { from: 'pause', to: 'done' }],
  });
  ids.broken = await create('Broken', { blocks: [start(), fn('boom', 'throw new Error("kaput")', 'Boom')], edges: [{ from: 'start', to: 'boom' }] });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await t?.close();
});

describe('MCP server', () => {
  it('lists deployed workflows as tools: stable unique names, input schemas with required, descriptions', async () => {
    const client = await connect();
    expect(client.getServerVersion()?.name).toBe('weft');
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    const twinName = `triage_ticket_${ids.twin.replace(/-/g, '').slice(0, 8)}`;
    expect([...byName.keys()]).toEqual(['triage_ticket', twinName, 'slow', 'broken']);
    const tool = byName.get('triage_ticket')!;
    expect(tool.title).toBe('Triage: Ticket');
    expect(tool.description).toBe('Summarizes a support ticket.');
    expect(tool.inputSchema).toEqual({
      type: 'object',
      properties: {
        ticket: { type: 'string' }, priority: { type: 'number' }, tags: { type: 'array' }, notify: { type: 'boolean', default: false },
      },
      required: ['ticket'],
      additionalProperties: false,
    });
    // No declared input: any object; no description of its own: a generated one.
    expect(byName.get(twinName)!.inputSchema).toEqual({ type: 'object', additionalProperties: true });
    expect(byName.get(twinName)!.description).toContain('"triage ticket"');
    // The draft is not a tool.
    expect(byName.has('draft_only')).toBe(false);
    // Names are stable across connections.
    expect((await (await connect()).listTools()).tools.map((x) => x.name)).toEqual([...byName.keys()]);
  });

  it('calls a tool: the workflow runs and the answer carries its output; Bearer auth works too', async () => {
    const client = await connect(t.workspaceId, { authorization: `Bearer ${t.apiKey}` });
    const before = await runCount(ids.triage);
    const res = await client.callTool({ name: 'triage_ticket', arguments: { ticket: 'site down', priority: 2, tags: ['web'] } });
    expect(res.isError).toBeFalsy();
    const out = res.structuredContent as { executionId: string; status: string; output: unknown };
    expect(out.status).toBe('completed');
    expect(out.output).toEqual({ summary: 'SITE DOWN', priority: 2, tags: ['web'], notify: false });
    expect(JSON.parse((res.content as { type: string; text: string }[])[0].text)).toEqual(out);
    expect(await runCount(ids.triage)).toBe(before + 1);
    const log = await t.call('GET', `/api/v1/logs/${out.executionId}`);
    expect(log.status).toBe(200);
    expect(log.body.data.trigger).toBe('mcp');
  });

  it('answers input that does not match the schema with a tool error, and starts no run', async () => {
    const client = await connect();
    const before = await runCount(ids.triage);
    const bad = [
      {},
      { ticket: 42 },
      { ticket: 'x', priority: 'high' },
      { ticket: 'x', tags: 'not-an-array' },
      { ticket: 'x', extra: true },
    ];
    for (const args of bad) {
      const res = await client.callTool({ name: 'triage_ticket', arguments: args });
      expect(res.isError, JSON.stringify(args)).toBe(true);
      expect((res.content as { text: string }[])[0].text).toMatch(/Invalid arguments for tool triage_ticket/);
    }
    const missing = await client.callTool({ name: 'triage_ticket', arguments: {} });
    expect((missing.content as { text: string }[])[0].text).toContain('"ticket" is required');
    expect(await runCount(ids.triage)).toBe(before);
  });

  it('answers a failed run and an undeployed or unknown workflow with tool errors', async () => {
    const client = await connect();
    const failed = await client.callTool({ name: 'broken', arguments: {} });
    expect(failed.isError).toBe(true);
    expect(failed.structuredContent).toMatchObject({ status: 'failed', errorBlockId: 'boom' });
    expect((failed.content as { text: string }[])[0].text).toContain('kaput');

    for (const name of ['draft_only', 'no_such_tool']) {
      const res = await client.callTool({ name, arguments: {} });
      expect(res.isError).toBe(true);
      expect((res.content as { text: string }[])[0].text).toContain(`Tool ${name} not found`);
    }
    expect(await runCount(ids.draft)).toBe(0);
  });

  it('answers a run longer than the wait with its job and status URL, with progress notifications on the way', async () => {
    const client = await connect();
    const progress: { progress: number; message?: string }[] = [];
    const res = await client.callTool(
      { name: 'slow', arguments: {}, _meta: { 'weft/waitSeconds': 0.3 } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    expect(res.isError).toBeFalsy();
    const out = res.structuredContent as { executionId: string; jobId: string; status: string; statusUrl: string };
    expect(out.jobId).toBe(`job_${out.executionId}`);
    expect(['queued', 'running']).toContain(out.status);
    expect(out.statusUrl).toBe(`${t.url}/api/jobs/${out.jobId}`);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0].message).toContain('queued');
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
    // The run carries on as a job.
    const job = await waitForJob(t, out.jobId);
    expect(job.status).toBe('completed');
    expect(job.output.output).toEqual({ done: true });
  });

  it('refuses an unknown key (401) and a workspace the key cannot reach (404) when connecting', async () => {
    await expect(connect(t.workspaceId, { 'x-api-key': 'sk-weft-00000000000000000000000000000000' })).rejects.toMatchObject({ code: 401 });
    await expect(connect(t.workspaceId, {})).rejects.toMatchObject({ code: 401 });
    const other = await createWorkspace(t.server.ctx.db, 'Other', t.userId);
    await expect(connect(other.id)).rejects.toMatchObject({ code: 404 });
    await expect(connect('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ code: 404 });
    const raw = await request(`${t.url}/api/mcp/${other.id}`, 'POST', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {
      'x-api-key': t.apiKey, accept: 'application/json, text/event-stream',
    });
    expect(raw.status).toBe(404);
    expect(raw.body).toEqual({ error: 'Workspace not found' });
  });

  it('answers GET and DELETE with 405 (stateless server) and a non-JSON-RPC body with 400', async () => {
    const h = { 'x-api-key': t.apiKey, accept: 'application/json, text/event-stream' };
    const get = await request(`${t.url}/api/mcp/${t.workspaceId}`, 'GET', undefined, h);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await request(`${t.url}/api/mcp/${t.workspaceId}`, 'DELETE', undefined, h)).status).toBe(405);
    const bad = await request(`${t.url}/api/mcp/${t.workspaceId}`, 'POST', { hello: 'world' }, h);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/JSON-RPC 2\.0 message/);
    const ok = await request(`${t.url}/api/mcp/${t.workspaceId}`, 'POST', { jsonrpc: '2.0', id: 7, method: 'tools/list' }, h);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-request-id')).toBeTruthy();
  });
});
