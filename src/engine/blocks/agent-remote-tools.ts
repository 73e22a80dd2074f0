// The agent's tools that come from elsewhere (docs/architecture.md, Connectors): the operations of a
// workspace connector, and the tools a remote MCP server lists. Both are expanded when the block runs
// into named tools with JSON Schemas; MCP sessions live for the block's run only (a tool list is never
// reused by another run or workspace).
import type { BlockContext } from '../block-type.js';
import type { AiTool, McpSession } from '../ports.js';
import { callConnector } from './connector.js';

/** Tools one agent may offer the model in all (its own, connector operations and MCP tools). */
export const MAX_AGENT_TOOLS = 64;
/** How long connecting to an MCP server and listing its tools may take. */
const MCP_CONNECT_TIMEOUT_MS = 30_000;

export interface ConnectorToolConfig {
  type: 'connector';
  connectorId: string;
  operationIds?: string[];
  timeoutMs?: number;
}

export interface McpToolConfig {
  type: 'mcp';
  url: string;
  headers?: Record<string, unknown>;
  tools?: string[];
}

/** A tool ready to offer: what the model sees, and how a call runs. */
export interface ExpandedTool {
  tool: AiTool;
  invoke(args: Record<string, unknown>): Promise<unknown>;
}

const textOf = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));

export async function connectorTools(ctx: BlockContext, config: ConnectorToolConfig): Promise<ExpandedTool[]> {
  const port = ctx.ports.connectors;
  if (!port) throw new Error('connectors are not available in this context');
  const connectorId = textOf(config.connectorId).trim();
  const { name, operations } = await port.describe(connectorId);
  let chosen = operations;
  if (config.operationIds && config.operationIds.length > 0) {
    chosen = config.operationIds.map((id) => {
      const op = operations.find((o) => o.operationId === id);
      if (!op) throw new Error(`connector "${name}" has no operation "${id}"`);
      return op;
    });
  }
  if (chosen.length > MAX_AGENT_TOOLS) {
    throw new Error(`connector "${name}" has ${chosen.length} operations; an agent offers at most ${MAX_AGENT_TOOLS} tools: list the ones to use in operationIds`);
  }
  return chosen.map((op) => {
    const params = (op.parameters.properties ?? {}) as Record<string, unknown>;
    // The request body travels as the argument "body" (or "requestBody" if a parameter is named body).
    const bodyKey = 'body' in params ? 'requestBody' : 'body';
    const required = [...((op.parameters.required as string[] | undefined) ?? []), ...(op.bodyRequired ? [bodyKey] : [])];
    const schema = {
      type: 'object',
      properties: { ...params, ...(op.requestBody ? { [bodyKey]: op.requestBody } : {}) },
      ...(required.length ? { required } : {}),
    };
    const description = [op.summary, op.description, `${op.method} ${op.path} (connector ${name})`].filter(Boolean).join('\n').slice(0, 4000);
    return {
      tool: { name: op.operationId, description, parameters: schema },
      invoke: async (args) => {
        const { [bodyKey]: body, ...parameters } = args;
        const res = await callConnector(ctx, {
          connectorId, operationId: op.operationId, parameters, body, timeoutMs: Number(config.timeoutMs ?? 30_000),
        });
        return { status: res.status, data: res.data };
      },
    };
  });
}

export async function mcpTools(ctx: BlockContext, config: McpToolConfig, sessions: McpSession[]): Promise<ExpandedTool[]> {
  const port = ctx.ports.mcp;
  if (!port) throw new Error('MCP servers are not available in this context');
  const url = textOf(config.url).trim();
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(config.headers ?? {})) if (v !== undefined && v !== null) headers[k] = textOf(v);
  const session = await port.open({ url, headers, signal: ctx.signal, timeoutMs: Math.max(1, Math.min(MCP_CONNECT_TIMEOUT_MS, ctx.remainingMs())) });
  sessions.push(session);
  let chosen = session.tools;
  if (config.tools && config.tools.length > 0) {
    chosen = config.tools.map((n) => {
      const t = session.tools.find((x) => x.name === n);
      if (!t) throw new Error(`MCP server ${url} has no tool "${n}" (it lists ${session.tools.map((x) => x.name).join(', ') || 'none'})`);
      return t;
    });
  }
  if (chosen.length > MAX_AGENT_TOOLS) {
    throw new Error(`MCP server ${url} lists ${chosen.length} tools; an agent offers at most ${MAX_AGENT_TOOLS}: name the ones to use in tools`);
  }
  return chosen.map((t) => ({
    tool: { name: t.name, ...(t.description ? { description: t.description.slice(0, 4000) } : {}), parameters: t.inputSchema },
    invoke: (args) => session.call(t.name, args, ctx.signal),
  }));
}
