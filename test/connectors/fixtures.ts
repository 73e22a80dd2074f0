// Test fixtures for connectors: a local HTTP API that serves its own OpenAPI 3.1 document (path, query
// and header parameters, a JSON body, bearer auth) and records what it receives, and a local remote MCP
// server built with the official SDK's server classes (Streamable HTTP, stateless).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface Received {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

export interface Upstream {
  url: string;
  received: Received[];
  document: Record<string, unknown>;
  close(): Promise<void>;
}

/** The API's own description: its servers entry points at itself. */
export function petDocument(baseUrl: string): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: { title: 'Pets', version: '1.0.0' },
    servers: [{ url: baseUrl }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        NewPet: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string', minLength: 1 }, tag: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
          additionalProperties: false,
        },
      },
      parameters: { Trace: { name: 'X-Trace', in: 'header', required: false, schema: { type: 'string', maxLength: 40 } } },
    },
    security: [{ bearer: [] }],
    paths: {
      '/pets/{petId}': {
        get: {
          operationId: 'getPet',
          summary: 'One pet',
          parameters: [
            { name: 'petId', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
            { name: 'fields', in: 'query', schema: { type: 'string', enum: ['all', 'short'] } },
            { $ref: '#/components/parameters/Trace' },
          ],
          responses: { 200: { description: 'the pet' } },
        },
      },
      '/pets': {
        post: {
          operationId: 'createPet',
          summary: 'Add a pet',
          parameters: [{ $ref: '#/components/parameters/Trace' }, { name: 'dryRun', in: 'query', schema: { type: 'boolean' } }],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPet' } } } },
          responses: { 201: { description: 'created' } },
        },
        // No operationId: the connector derives one from the method and path.
        get: { summary: 'List pets', parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', maximum: 50 } }], responses: { 200: { description: 'pets' } } },
      },
    },
  };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
  });
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closer(server: http.Server) {
  return () => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });
}

export async function startUpstream(): Promise<Upstream> {
  const received: Received[] = [];
  const up: Upstream = { url: '', received, document: {}, close: async () => undefined };
  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (status: number, body: unknown, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (url.pathname === '/openapi.json') return send(200, up.document);
    if (url.pathname === '/not-json') return send(200, 'openapi: 3.1.0', 'text/yaml');
    let body: unknown = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = raw;
    }
    received.push({ method: req.method ?? '', path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body });
    const pet = /^\/pets\/(\d+)$/.exec(url.pathname);
    if (req.method === 'GET' && pet) {
      if (pet[1] === '404') return send(404, { message: 'no such pet' });
      return send(200, { id: Number(pet[1]), name: 'Rex', fields: url.searchParams.get('fields'), sawAuth: req.headers.authorization ?? null });
    }
    if (req.method === 'POST' && url.pathname === '/pets') return send(201, { id: 7, ...(body as object) });
    if (req.method === 'GET' && url.pathname === '/pets') return send(200, [{ id: 1, name: 'Rex' }]);
    return send(404, { message: 'unknown' });
  });
  up.url = await listen(server);
  up.document = petDocument(up.url);
  up.close = closer(server);
  return up;
}

export interface McpTestServer {
  url: string;
  calls: { name: string; args: unknown; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/** A remote MCP server (official SDK, Streamable HTTP, one stateless server per request). */
export async function startMcpServer(): Promise<McpTestServer> {
  const calls: McpTestServer['calls'] = [];
  let currentHeaders: http.IncomingHttpHeaders = {};
  const build = () => {
    const mcp = new McpServer({ name: 'weather', version: '1.0.0' });
    mcp.registerTool('forecast', {
      description: 'Forecast for a city',
      inputSchema: { city: z.string() },
    }, async ({ city }) => {
      calls.push({ name: 'forecast', args: { city }, headers: currentHeaders });
      return { content: [{ type: 'text', text: `Sunny in ${city}, 21C` }] };
    });
    mcp.registerTool('alerts', { description: 'Weather alerts', inputSchema: { region: z.string() } }, async ({ region }) => {
      calls.push({ name: 'alerts', args: { region }, headers: currentHeaders });
      return { content: [{ type: 'text', text: `No alerts for ${region}` }] };
    });
    return mcp;
  };
  const server = http.createServer(async (req, res) => {
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const raw = await readBody(req);
    currentHeaders = req.headers;
    const mcp = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, raw ? JSON.parse(raw) : undefined);
  });
  const url = `${await listen(server)}/mcp`;
  return { url, calls, close: closer(server) };
}
