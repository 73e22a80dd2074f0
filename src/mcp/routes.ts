// The MCP server: a workspace's deployed workflows as tools over the Model Context Protocol's streamable
// HTTP transport at /api/mcp/{workspaceId}, built on the official SDK.
//
// Stateless: every POST gets its own Server and transport (no session id, nothing kept between
// requests), so any API process can answer any request and nothing leaks between callers. There is no
// standalone server-to-client stream: GET and DELETE answer 405, which clients read as "not offered".
// The key is checked by the shared auth hook (X-API-Key or Authorization: Bearer); the workspace is
// authorized before the transport sees the request, so an unknown key fails the connection with 401
// and a workspace the key cannot reach with 404, exactly like a workspace that does not exist.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AccountsService } from '../accounts/service.js';
import type { AppContext } from '../context.js';
import type { AuthContext } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { errorResponses, errorSchema } from '../http/schemas.js';
import type { ExecutionService } from '../runs/service.js';
import type { WorkflowService } from '../workflows/service.js';
import { admitMessages, invalidParamsError, type RequestSchemas } from './admission.js';
import { callWorkflowTool, DEFAULT_WAIT_SECONDS, toolError, WAIT_META_KEY } from './tool-call.js';
import { InvalidToolCursor, ToolCatalog, ToolListBudgetSpent } from './tool-catalog.js';

const SERVER_INFO = { name: 'weft', version: '0.1.0' };

const params = z.object({ workspaceId: z.string().min(1).max(128) });
const jsonRpcMessage = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number()]).optional(),
  method: z.string().max(200).optional(),
});

/** The wait a call asked for in `_meta` (seconds, 0 to the default), else the default. */
function waitSeconds(meta: Record<string, unknown> | undefined): number {
  const asked = meta?.[WAIT_META_KEY];
  return typeof asked === 'number' && Number.isFinite(asked) ? Math.min(Math.max(asked, 0), DEFAULT_WAIT_SECONDS) : DEFAULT_WAIT_SECONDS;
}

interface RequestScope {
  auth: AuthContext | undefined;
  workspaceId: string;
  baseUrl: string;
  /** The workspace's tools, read at most once for the whole request (its admission included). */
  catalog: ToolCatalog;
}

/** The MCP SDK (about 90 ms to load), loaded by the first MCP request rather than by every process. */
let sdkLoading: Promise<McpSdk> | undefined;
type McpSdk = Awaited<ReturnType<typeof importSdk>>;
async function importSdk() {
  const [server, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  // The requests this server answers, each with the schema its params must match (else -32602).
  const requestSchemas: RequestSchemas = {
    initialize: types.InitializeRequestSchema, ping: types.PingRequestSchema,
    'tools/list': types.ListToolsRequestSchema, 'tools/call': types.CallToolRequestSchema,
  };
  return {
    Server: server.Server, StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    CallToolRequestSchema: types.CallToolRequestSchema, ListToolsRequestSchema: types.ListToolsRequestSchema,
    McpError: types.McpError, ErrorCode: types.ErrorCode,
    requestSchemas,
  };
}
function mcpSdk(): Promise<McpSdk> {
  sdkLoading ??= importSdk();
  sdkLoading.catch(() => {
    sdkLoading = undefined;
  });
  return sdkLoading;
}

/** One MCP server for one HTTP request, acting for its caller in its workspace. */
function mcpServer(sdk: McpSdk, runs: ExecutionService, workflows: WorkflowService, scope: RequestScope): Server {
  const { CallToolRequestSchema, ListToolsRequestSchema } = sdk;
  const server = new sdk.Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions: 'Each tool runs one deployed workflow of this Weft workspace and answers with the run\'s output. '
      + 'Runs that take longer than the call waits answer with a job id and a status URL instead.',
  });

  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    let listed;
    try {
      listed = await scope.catalog.list(request.params?.cursor);
    } catch (err) {
      if (err instanceof InvalidToolCursor) throw new sdk.McpError(sdk.ErrorCode.InvalidParams, err.message);
      if (err instanceof ToolListBudgetSpent) throw new sdk.McpError(sdk.ErrorCode.InvalidRequest, err.message);
      throw err;
    }
    return {
      tools: listed.tools.map((t) => ({
        name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema,
        annotations: { title: t.title, readOnlyHint: false, openWorldHint: true },
      })),
      ...(listed.nextCursor ? { nextCursor: listed.nextCursor } : {}),
    };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args, _meta: meta } = request.params;
    const tool = await scope.catalog.find(name);
    // Like the SDK's own McpServer: an unknown tool (never deployed, undeployed, renamed) is a tool error.
    if (!tool) return toolError(`Tool ${name} not found: no deployed workflow of this workspace has that tool name`);
    const token = meta?.progressToken;
    let progress = 0;
    return callWorkflowTool({ runs, workflows }, tool, {
      auth: scope.auth,
      arguments: args,
      baseUrl: scope.baseUrl,
      waitSeconds: waitSeconds(meta),
      signal: extra.signal,
      progress: token === undefined ? undefined : async (message) => {
        progress += 1;
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message } })
          .catch(() => undefined); // the caller went away: the run carries on as a job
      },
    });
  });
  return server;
}

export function mcpRoutes(runs: ExecutionService, workflows: WorkflowService, accounts: AccountsService): FastifyPluginAsyncZod<{ ctx: AppContext }> {
  return async (app, { ctx }) => {
    // A workspace the key cannot reach is answered like a missing one (404), never 403: the key learns nothing of it.
    const reach = (auth: AuthContext | undefined, workspaceId: string) => accounts.authorize(auth, workspaceId, 'read', { conceal: true });
    // Inside the API rate limit like /api/v1, one token per JSON-RPC message (admission.ts): a valid
    // tools/call runs a workflow and is admitted as a run instead (the sync bucket: its caller waits); every
    // other message, a tools/call of an unknown tool or with arguments that do not match included, takes a
    // token of the caller's api bucket. A request the bucket cannot cover is refused whole (429, Retry-After).
    const admitRequest = async (auth: AuthContext | undefined, body: unknown, schemas: RequestSchemas, catalog: ToolCatalog) => {
      if (!auth || !runs.limits.enabled) return;
      await admitMessages({ limits: runs.limits, billed: () => accounts.billedAccount(auth), schemas, catalog, body });
    };
    app.post('/api/mcp/:workspaceId', {
      config: { auth: 'bearer', errorFamily: 'v1', rateLimitHeaders: false },
      schema: {
        tags: ['mcp'],
        summary: 'MCP server (streamable HTTP, stateless): the workspace\'s deployed workflows as tools',
        description: 'Send JSON-RPC messages of the Model Context Protocol with Accept: application/json, text/event-stream. '
          + 'Authenticate with X-API-Key or Authorization: Bearer. tools/list lists one tool per deployed workflow; tools/call runs it.',
        security: [{ apiKey: [] }, { bearer: [] }],
        params,
        body: z.union([jsonRpcMessage, z.array(jsonRpcMessage).min(1).max(100)], {
          error: 'The body must be a JSON-RPC 2.0 message (an object with "jsonrpc": "2.0") or a batch of 1 to 100 of them',
        }).describe('A JSON-RPC message or a batch of them'),
        response: {
          200: z.unknown().describe('The JSON-RPC answer as text/event-stream (or application/json)'),
          202: z.unknown().describe('Accepted: notifications and responses sent by the client'),
          ...errorResponses,
          406: errorSchema.describe('Accept must list application/json and text/event-stream'),
        },
      },
    }, async (request, reply) => {
      const access = await reach(request.auth, request.params.workspaceId);
      const sdk = await mcpSdk();
      const catalog = new ToolCatalog(workflows, access.workspaceId);
      await admitRequest(request.auth, request.body, sdk.requestSchemas, catalog);
      const scope = { auth: request.auth, workspaceId: access.workspaceId, baseUrl: ctx.config.baseUrl ?? `${request.protocol}://${request.host}`, catalog };
      const server = mcpServer(sdk, runs, workflows, scope);
      const transport = new sdk.StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      // From here the transport writes the answer on the raw response; headers set so far go with it.
      reply.hijack();
      for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) reply.raw.setHeader(k, v);
      reply.raw.on('close', () => {
        void transport.close().catch(() => undefined);
        void server.close().catch(() => undefined);
      });
      try {
        await server.connect(transport);
        // Params a method does not take are -32602 "Invalid params" (the SDK would answer -32603): such a
        // request is answered here and never reaches the server.
        const deliver = transport.onmessage;
        transport.onmessage = (message, extra) => {
          const invalid = invalidParamsError(sdk.requestSchemas, message);
          if (invalid) void transport.send(invalid).catch((err: unknown) => request.log.warn({ err }, 'MCP answer not sent'));
          else deliver?.(message, extra);
        };
        await transport.handleRequest(request.raw, reply.raw, request.body);
      } catch (err) {
        request.log.error({ err }, 'MCP request failed');
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
          reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }));
        } else if (!reply.raw.writableEnded) {
          reply.raw.end();
        }
      }
    });

    // Stateless: no stream for server-initiated messages and no session to end.
    const notOffered = async (request: { auth?: AuthContext; params: { workspaceId: string } }) => {
      await reach(request.auth, request.params.workspaceId);
      throw new HttpError(405, 'Method not allowed: this MCP server is stateless; send JSON-RPC messages with POST', {}, { Allow: 'POST' });
    };
    for (const method of ['GET', 'DELETE'] as const) {
      app.route({
        method, url: '/api/mcp/:workspaceId',
        config: { auth: 'bearer', errorFamily: 'v1', rateLimitHeaders: false },
        schema: {
          tags: ['mcp'], summary: `MCP ${method}: not offered (405; the server is stateless)`,
          security: [{ apiKey: [] }, { bearer: [] }],
          params,
          response: { 401: errorSchema, 404: errorSchema, 405: errorSchema },
        },
        handler: notOffered,
      });
    }
  };
}
