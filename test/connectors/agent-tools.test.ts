// Agent tools from connectors and remote MCP servers, through the HTTP API on both databases: the fake
// OpenAI-wire model asks for a connector operation, then for a tool of a local MCP server (official SDK),
// and answers with both results; the tools it is offered carry the operations' JSON Schemas. A server that
// does not answer fails the run naming it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { startFakeProviders, type FakeProviders, type RecordedRequest } from '../support/fake-providers.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';
import { startMcpServer, startUpstream, type McpTestServer, type Upstream } from './fixtures.js';

const TOKEN = `pet_${randomBytes(12).toString('hex')}`;
const MCP_KEY = `mcp_${randomBytes(12).toString('hex')}`;

describe('agent tools: connectors and remote MCP servers', () => {
  let t: TestServer;
  let fake: FakeProviders;
  let up: Upstream;
  let mcp: McpTestServer;
  let connectorId: string;

  beforeAll(async () => {
    [fake, up, mcp] = await Promise.all([startFakeProviders(), startUpstream(), startMcpServer()]);
    t = await startTestServer({ env: { ...fake.env, WEFT_ALLOW_PRIVATE_NETWORK: 'true' } });
    await ledger.grant(t.server.ctx.db, `workspace:${t.workspaceId}`, ledger.usdToNano(20), 'test');
    await t.call('PUT', '/api/v1/secrets/PETS_TOKEN', { workspaceId: t.workspaceId, value: TOKEN });
    await t.call('PUT', '/api/v1/secrets/MCP_KEY', { workspaceId: t.workspaceId, value: MCP_KEY });
    const r = await t.call('POST', '/api/v1/connectors', { workspaceId: t.workspaceId, name: 'Pets', spec: up.document, auth: { type: 'bearer', secret: 'PETS_TOKEN' } });
    expect(r.status, r.text).toBe(201);
    connectorId = r.body.data.connector.id;
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([fake?.close(), up?.close(), mcp?.close()]);
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  const agent = (tools: unknown[]) => ({
    blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'gpt-4o', userPrompt: 'How is pet 5, and the weather in Oslo?', tools } }],
    edges: [{ from: 'start', to: 'agent' }],
  });
  const toolMessages = (req: RecordedRequest) => req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);

  it('calls a connector operation, then an MCP tool, and answers with both results', async () => {
    let round = 0;
    fake.handler = (req) => {
      round++;
      if (round === 1) return { toolCalls: [{ id: 'a', name: 'getPet', arguments: { petId: 5, fields: 'all' } }] };
      if (round === 2) return { toolCalls: [{ id: 'b', name: 'forecast', arguments: { city: 'Oslo' } }] };
      const results = toolMessages(req).join(' | ');
      return { text: `Answer from: ${results}` };
    };
    const id = await deploy(t, 'agent-both', agent([
      { type: 'connector', connectorId, operationIds: ['getPet', 'createPet'] },
      { type: 'mcp', url: mcp.url, headers: { Authorization: 'Bearer {{MCP_KEY}}' }, tools: ['forecast'] },
    ]));
    const before = up.received.length;
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.status, r.text).toBe(200);
    expect(r.body.success, r.text).toBe(true);

    // The model was offered the chosen operations with their schemas and the chosen MCP tool.
    const offered = fake.requests[0].body.tools.map((x: any) => x.function);
    expect(offered.map((f: any) => f.name)).toEqual(['getPet', 'createPet', 'forecast']);
    expect(offered[0].parameters).toMatchObject({ type: 'object', required: ['petId'], properties: { petId: { type: 'integer' } } });
    expect(offered[1].parameters).toMatchObject({ required: ['body'], properties: { body: { required: ['name'] } } });
    expect(offered[2].parameters).toMatchObject({ type: 'object', properties: { city: { type: 'string' } } });

    // The API got the call with the connector's auth; the MCP server got the tool call with its header.
    expect(up.received.slice(before)).toMatchObject([{ method: 'GET', path: '/pets/5', query: { fields: 'all' } }]);
    expect(up.received.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(mcp.calls.at(-1)).toMatchObject({ name: 'forecast', args: { city: 'Oslo' } });
    expect(mcp.calls.at(-1)!.headers.authorization).toBe(`Bearer ${MCP_KEY}`);

    const content: string = r.body.output.content;
    expect(content).toContain('"name":"Rex"');
    expect(content).toContain('Sunny in Oslo, 21C');
    expect(r.body.output.toolCalls.map((c: any) => c.name)).toEqual(['getPet', 'forecast']);
    expect(r.text.includes(TOKEN.slice(4, 16))).toBe(false);
    expect(r.text.includes(MCP_KEY.slice(4, 16))).toBe(false);
  });

  it('offers every tool of the MCP server when none are named, and all operations of a connector', async () => {
    fake.handler = () => ({ text: 'ok' });
    const id = await deploy(t, 'agent-all', agent([{ type: 'connector', connectorId }, { type: 'mcp', url: mcp.url }]));
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.body.success, r.text).toBe(true);
    expect(fake.requests[0].body.tools.map((x: any) => x.function.name).sort()).toEqual(['alerts', 'createPet', 'forecast', 'getPet', 'get_pets']);
  });

  it('gives the model a tool error when a connector call has bad arguments, naming the parameter', async () => {
    let round = 0;
    fake.handler = (req) => {
      round++;
      if (round === 1) return { toolCalls: [{ id: 'a', name: 'getPet', arguments: { petId: -2 } }] };
      return { text: `saw ${toolMessages(req).join('')}` };
    };
    const id = await deploy(t, 'agent-bad-args', agent([{ type: 'connector', connectorId, operationIds: ['getPet'] }]));
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.body.success, r.text).toBe(true);
    expect(r.body.output.content).toContain('parameter \\"petId\\" (path) must be >= 1');
  });

  it('fails the run naming an MCP server that does not answer, or answers something else', async () => {
    fake.handler = () => ({ text: 'never' });
    const closed = http.createServer();
    await new Promise<void>((res) => closed.listen(0, '127.0.0.1', res));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/mcp`;
    await new Promise<void>((res) => closed.close(() => res()));
    const dead = await deploy(t, 'agent-dead-mcp', agent([{ type: 'mcp', url: deadUrl }]));
    const r1 = await t.call('POST', `/api/workflows/${dead}/execute`, {});
    expect(r1.body.success).toBe(false);
    expect(r1.body.error).toContain(`MCP server ${deadUrl}`);

    // Not an MCP server: the pets API answers 404 JSON.
    const wrong = await deploy(t, 'agent-wrong-mcp', agent([{ type: 'mcp', url: `${up.url}/pets/1` }]));
    const r2 = await t.call('POST', `/api/workflows/${wrong}/execute`, {});
    expect(r2.body.success).toBe(false);
    expect(r2.body.error).toContain(`MCP server ${up.url}/pets/1`);
    expect(fake.requests).toHaveLength(0);
  });

  it('fails the run when a named MCP tool or connector operation does not exist', async () => {
    fake.handler = () => ({ text: 'never' });
    const id = await deploy(t, 'agent-missing-tool', agent([{ type: 'mcp', url: mcp.url, tools: ['tides'] }]));
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.body.success).toBe(false);
    expect(r.body.error).toContain('has no tool "tides"');
    const saved = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'bad-op', definition: agent([{ type: 'connector', connectorId, operationIds: ['nope'] }]) });
    expect(saved.status).toBe(400);
    expect(saved.body.error).toContain('has no operation "nope"');
  });

  it('refuses two tools with one name', async () => {
    fake.handler = () => ({ text: 'never' });
    const id = await deploy(t, 'agent-dup', agent([
      { type: 'connector', connectorId, operationIds: ['getPet'] },
      { type: 'http', name: 'getPet', url: `${up.url}/pets/1`, method: 'GET' },
    ]));
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.body.success).toBe(false);
    expect(r.body.error).toContain('two tools are named "getPet"');
  });
});
