// Schemas a tenant's remote server or document supplies are not run by a general validator on the event loop
// (docs/architecture.md, Connectors): an MCP tool's outputSchema with a backtracking pattern, and an OpenAPI
// body schema with uniqueItems over 20,000 objects. Before, the first held the event loop about 150 s (the SDK's
// client checked the result with ajv's backtracking pattern) and the second about 180 s (ajv's uniqueItems
// compares every pair), on a loaded 2-core host: both tests ran past their timeout.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { startFakeProviders, type FakeProviders, type RecordedRequest } from '../support/fake-providers.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

/** `^(a+)+$` against this backtracks through about 2^34 ways of splitting the letters before failing. */
const EVIL_TEXT = `${'a'.repeat(34)}!`;

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const close = (server: http.Server) => new Promise<void>((r) => {
  server.closeAllConnections();
  server.close(() => r());
});

async function readJson(req: http.IncomingMessage): Promise<any> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return parts.length ? JSON.parse(Buffer.concat(parts).toString('utf8')) : undefined;
}

/** An MCP server (the SDK's low-level server, raw JSON Schemas) whose one tool claims a backtracking outputSchema. */
function evilMcpServer(calls: string[]): http.Server {
  return http.createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const body = await readJson(req);
    const mcp = new Server({ name: 'evil', version: '1.0.0' }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: 'spell', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { word: { type: 'string', pattern: '^(a+)+$' } } } }],
    }));
    mcp.setRequestHandler(CallToolRequestSchema, async (r) => {
      calls.push(r.params.name);
      return { content: [{ type: 'text', text: EVIL_TEXT }], structuredContent: { word: EVIL_TEXT } };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  });
}

describe('remote schemas are not run on the event loop', () => {
  let t: TestServer;
  let fake: FakeProviders;
  let mcp: http.Server;
  let mcpUrl: string;
  let api: http.Server;
  let apiUrl: string;
  const mcpCalls: string[] = [];
  const received: number[] = [];

  beforeAll(async () => {
    mcp = evilMcpServer(mcpCalls);
    api = http.createServer(async (req, res) => {
      const body = await readJson(req);
      received.push(Array.isArray(body) ? body.length : -1);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count: Array.isArray(body) ? body.length : null }));
    });
    [fake, mcpUrl, apiUrl] = await Promise.all([startFakeProviders(), listen(mcp).then((u) => `${u}/mcp`), listen(api)]);
    t = await startTestServer({ env: { ...fake.env, WEFT_ALLOW_PRIVATE_NETWORK: 'true' } });
    await ledger.grant(t.server.ctx.db, `workspace:${t.workspaceId}`, ledger.usdToNano(5), 'test');
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([fake?.close(), mcp && close(mcp), api && close(api)]);
  });

  it("hands an MCP tool's result to the model without checking it against the server's outputSchema", async () => {
    let round = 0;
    fake.handler = (req: RecordedRequest) => {
      round++;
      if (round === 1) return { toolCalls: [{ id: 'a', name: 'spell', arguments: {} }] };
      return { text: `tool said ${req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content).join('')}` };
    };
    const id = await deploy(t, 'evil-mcp', {
      blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'gpt-4o', userPrompt: 'Spell it', tools: [{ type: 'mcp', url: mcpUrl }] } }],
      edges: [{ from: 'start', to: 'agent' }],
    });
    const [r, health] = await Promise.all([t.call('POST', `/api/workflows/${id}/execute`, {}), t.call('GET', '/healthz')]);
    expect(r.status, r.text).toBe(200);
    expect(r.body.success, r.text).toBe(true);
    expect(mcpCalls).toEqual(['spell']);
    expect(r.body.output.content).toContain(EVIL_TEXT);
    expect(health.status).toBe(200);
  });

  it('sends a body of 20,000 objects under uniqueItems, checked within the budget', async () => {
    const document = {
      openapi: '3.1.0', info: { title: 'Items', version: '1' }, servers: [{ url: apiUrl }],
      paths: {
        '/items': {
          post: {
            operationId: 'putItems',
            requestBody: { required: true, content: { 'application/json': { schema: { type: 'array', uniqueItems: true, items: { type: 'object', required: ['id'] } } } } },
            responses: { 200: { description: 'ok' } },
          },
        },
      },
    };
    const c = await t.call('POST', '/api/v1/connectors', { workspaceId: t.workspaceId, name: 'Items', spec: document });
    expect(c.status, c.text).toBe(201);
    // Distinct objects that a pairwise comparison walks deep into before telling apart.
    const make = 'return Array.from({ length: 20000 }, (_, i) => ({ id: i, v: { a: { b: { c: [1, 2, 3, 4, 5, 6, 7, 8] } } } }))';
    const id = await deploy(t, 'unique-items', {
      blocks: [start(), fn('gen', make, 'Gen'), { id: 'call', type: 'connector', name: 'Call', config: { connectorId: c.body.data.connector.id, operationId: 'putItems', body: '<gen>' } }],
      edges: [{ from: 'start', to: 'gen' }, { from: 'gen', to: 'call' }],
    });
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.body.success, r.text.slice(0, 500)).toBe(true);
    expect(r.body.output).toMatchObject({ status: 200, data: { count: 20_000 } });
    expect(received).toEqual([20_000]);

    // A duplicate among few items is still found before anything is sent.
    const dup = await deploy(t, 'unique-items-dup', {
      blocks: [start(), { id: 'call', type: 'connector', name: 'Call', config: { connectorId: c.body.data.connector.id, operationId: 'putItems', body: [{ id: 1 }, { id: 2 }, { id: 1 }] } }],
      edges: [{ from: 'start', to: 'call' }],
    });
    const d = await t.call('POST', `/api/workflows/${dup}/execute`, {});
    expect(d.body.success).toBe(false);
    expect(d.body.error).toContain('body must NOT have duplicate items (items ## 0 and 2 are identical)');
    expect(received).toHaveLength(1);
  });
});
