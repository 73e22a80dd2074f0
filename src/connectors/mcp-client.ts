// Remote MCP servers as agent tools (docs/architecture.md, Connectors): the official SDK's client over
// Streamable HTTP, with every request sent through the guarded HTTP client (private addresses refused
// unless WEFT_ALLOW_PRIVATE_NETWORK), and bounds on time, tool count and result size. A session lives for
// one agent block's run; nothing is cached across runs or workspaces.
import type { jsonSchemaValidator, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/index.js';
import type { HttpPort, McpPort, McpSession, McpToolInfo } from '../engine/index.js';

/** Tools read from one server (a server listing more is cut here; an agent offers at most 64 anyway). */
export const MAX_MCP_TOOLS = 256;
/** Pages of tools/list followed. */
const MAX_TOOL_PAGES = 5;
/** One tool call may take this long. */
export const MCP_CALL_TIMEOUT_MS = 60_000;
/** Text of a tool result kept (the agent cuts what goes to the model further). */
export const MAX_MCP_RESULT_CHARS = 200_000;

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

function headersOf(init: RequestInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init?.headers).forEach((v, k) => (out[k] = v));
  return out;
}

/**
 * A fetch for the SDK's transport over the guarded HTTP port. Whole bodies only: the GET that would open
 * a standing event stream (server-initiated messages, unused here) is answered 405, as servers without
 * one do, so the client never waits on it.
 */
function guardedFetch(http: HttpPort, timeoutMs: () => number) {
  return async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const method = (init?.method ?? 'GET').toUpperCase();
    if (method === 'GET') return new Response(null, { status: 405 });
    const body = typeof init?.body === 'string' ? init.body : undefined;
    const res = await http.request({
      url: url.toString(), method, headers: headersOf(init), body, timeoutMs: timeoutMs(), signal: init?.signal ?? undefined,
    });
    const status = res.status === 0 ? 502 : res.status;
    const empty = status === 204 || status === 304;
    return new Response(empty ? null : res.body, { status, headers: res.headers });
  };
}

function resultValue(result: Record<string, unknown>): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = Array.isArray(result.content) ? (result.content as Record<string, unknown>[]) : [];
  if (content.length > 0 && content.every((c) => c.type === 'text')) {
    const text = content.map((c) => String(c.text ?? '')).join('\n');
    return text.length > MAX_MCP_RESULT_CHARS ? `${text.slice(0, MAX_MCP_RESULT_CHARS)}…(truncated)` : text;
  }
  const json = JSON.stringify(content);
  return json.length > MAX_MCP_RESULT_CHARS ? `${json.slice(0, MAX_MCP_RESULT_CHARS)}…(truncated)` : content;
}

/**
 * The SDK's client compiles each listed tool's outputSchema with ajv and checks structuredContent against it on
 * the main thread. Both come from the server, which a tenant chooses: `{"pattern": "^(a+)+$"}` and 24 letters
 * then '!' held the event loop 1.5 s, doubling with each letter. A result is untrusted data to Weft whatever
 * the server claims of it, so nothing is compiled or checked.
 */
const acceptEveryOutput: jsonSchemaValidator = {
  getValidator<T>(): JsonSchemaValidator<T> {
    return (input) => ({ valid: true, data: input as T, errorMessage: undefined });
  },
};

// The MCP client SDK (with its schemas, about 0.25 s to load) loads on the first MCP call: an instance
// whose workflows call no MCP server never carries it (docs/architecture.md, "Start-up").
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/client/index.js'), typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js')]> | undefined;
function mcpSdk(): NonNullable<typeof sdk> {
  return (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/client/index.js'), import('@modelcontextprotocol/sdk/client/streamableHttp.js')]));
}

/** The engine's MCP port over the guarded HTTP client. */
export function mcpPort(http: HttpPort): McpPort {
  return {
    async open({ url, headers, signal, timeoutMs }): Promise<McpSession> {
      let endpoint: URL;
      try {
        endpoint = new URL(url);
      } catch {
        throw new Error(`MCP server "${url}" is not a valid URL`);
      }
      if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') throw new Error(`MCP server ${url}: only http and https URLs are allowed`);
      const where = `${endpoint.origin}${endpoint.pathname}`;
      const [{ Client }, { StreamableHTTPClientTransport }] = await mcpSdk();
      let requestTimeout = timeoutMs;
      const transport = new StreamableHTTPClientTransport(endpoint, {
        requestInit: { headers },
        fetch: guardedFetch(http, () => requestTimeout),
      });
      const client = new Client({ name: 'weft-agent', version: '1.0.0' }, { capabilities: {}, jsonSchemaValidator: acceptEveryOutput });
      const tools: McpToolInfo[] = [];
      try {
        await client.connect(transport, { signal, timeout: timeoutMs });
        let cursor: string | undefined;
        for (let page = 0; page < MAX_TOOL_PAGES && tools.length < MAX_MCP_TOOLS; page++) {
          const listed = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout: timeoutMs });
          for (const t of listed.tools) {
            if (tools.length >= MAX_MCP_TOOLS) break;
            tools.push({
              name: t.name,
              ...(t.description ? { description: t.description } : {}),
              inputSchema: (t.inputSchema ?? { type: 'object', properties: {} }) as Record<string, unknown>,
            });
          }
          cursor = listed.nextCursor;
          if (!cursor) break;
        }
      } catch (err) {
        await client.close().catch(() => undefined);
        throw new Error(`MCP server ${where} did not answer as an MCP server: ${message(err)}`);
      }
      requestTimeout = MCP_CALL_TIMEOUT_MS;
      return {
        tools,
        async call(name, args, callSignal) {
          let result: Record<string, unknown>;
          try {
            result = (await client.callTool({ name, arguments: args }, undefined, { signal: callSignal, timeout: MCP_CALL_TIMEOUT_MS })) as Record<string, unknown>;
          } catch (err) {
            throw new Error(`MCP server ${where}: tool ${name} failed: ${message(err)}`);
          }
          const value = resultValue(result);
          if (result.isError === true) throw new Error(`MCP server ${where}: tool ${name} reported an error: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
          return value;
        },
        close: () => client.close(),
      };
    },
  };
}
