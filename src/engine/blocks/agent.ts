// Agent: a language model call with system and user prompts (references resolved), optional tools
// that call other deployed workflows (child-workflow port) or HTTP endpoints (HTTP port), and
// optional structured output by JSON schema. The tool loop is bounded (at most 10 rounds); after
// the last round the model is asked for its answer without tools. Reaches the model through the
// AI port (ctx.ports.ai), which bills the run's account.
import { z } from 'zod';
import { defineBlockType, type BlockContext, type BlockResult } from '../block-type.js';
import { aiPortOf, numberOf, parseJsonAnswer, textOf, UsageTotals, type AiMessage, type AiTool, type AiToolCall, type ChatResponse } from './ai-port.js';
import { MAX_WORKFLOW_DEPTH } from './workflow.js';
import { connectorTools, MAX_AGENT_TOOLS, mcpTools, type ExpandedTool } from './agent-remote-tools.js';
import type { McpSession } from '../ports.js';

export const MAX_TOOL_ROUNDS = 10;
/** Tool results longer than this are cut before they go back to the model. */
const MAX_TOOL_RESULT_CHARS = 50_000;

const toolName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'tool names are 1 to 64 letters, digits, underscores or dashes');
const jsonSchemaObject = z.record(z.string(), z.unknown());

const workflowTool = z.strictObject({
  type: z.literal('workflow'),
  name: toolName,
  description: z.string().max(4000).optional(),
  workflowId: z.string().min(1),
  /** JSON schema of the input the model passes to the child workflow. */
  parameters: jsonSchemaObject.optional(),
});

const httpTool = z.strictObject({
  type: z.literal('http'),
  name: toolName,
  description: z.string().max(4000).optional(),
  url: z.string().min(1),
  method: z.string().regex(/^[A-Za-z]+$/, 'method must be an HTTP method name').default('POST'),
  headers: z.record(z.string(), z.unknown()).optional(),
  /** JSON schema of the arguments: sent as the JSON body, or as query parameters for GET. */
  parameters: jsonSchemaObject.optional(),
  timeoutMs: z.number().int().min(1).max(300_000).default(30_000),
});

const connectorTool = z.strictObject({
  type: z.literal('connector'),
  connectorId: z.string().min(1).max(256),
  /** The operations offered, by id (default: all of them, within the tool bound). */
  operationIds: z.array(z.string().min(1).max(256)).max(MAX_AGENT_TOOLS).optional(),
  timeoutMs: z.number().int().min(1).max(300_000).default(30_000),
});

const mcpTool = z.strictObject({
  type: z.literal('mcp'),
  /** Streamable HTTP endpoint of the server. */
  url: z.string().min(1).max(2048),
  /** Sent with every request to the server; values may reference secrets ({{NAME}}). */
  headers: z.record(z.string(), z.unknown()).optional(),
  /** The tools offered, by name (default: all it lists, within the tool bound). */
  tools: z.array(z.string().min(1).max(256)).max(MAX_AGENT_TOOLS).optional(),
});

export const agentConfigSchema = z
  .strictObject({
    model: z.string().min(1).max(256),
    systemPrompt: z.string().max(1_000_000).optional(),
    userPrompt: z.string().min(1).max(1_000_000),
    temperature: z.union([z.number().min(0).max(2), z.string()]).optional(),
    maxTokens: z.union([z.number().int().min(1).max(1_000_000), z.string()]).optional(),
    tools: z.array(z.discriminatedUnion('type', [workflowTool, httpTool, connectorTool, mcpTool])).max(MAX_AGENT_TOOLS).optional(),
    toolChoice: z.enum(['auto', 'none', 'required']).optional(),
    /** Structured output: the answer is an object matching this JSON schema; its fields join the output. */
    responseFormat: z.strictObject({ name: toolName.optional(), schema: jsonSchemaObject }).optional(),
    maxToolRounds: z.number().int().min(1).max(MAX_TOOL_ROUNDS).default(MAX_TOOL_ROUNDS),
  })
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    (c.tools ?? []).forEach((t, i) => {
      if (t.type === 'connector' || t.type === 'mcp') return;
      if (seen.has(t.name)) ctx.addIssue({ code: 'custom', path: ['tools', i, 'name'], message: `duplicate tool name "${t.name}"` });
      seen.add(t.name);
    });
  });

export type AgentConfig = z.infer<typeof agentConfigSchema>;
type ToolConfig = Extract<NonNullable<AgentConfig['tools']>[number], { type: 'workflow' | 'http' }>;

const emptyObjectSchema = { type: 'object', properties: {} };

function parseArgs(text: string): Record<string, unknown> {
  if (!text.trim()) return {};
  const v = JSON.parse(text) as unknown;
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('tool arguments must be a JSON object');
  return v as Record<string, unknown>;
}

function clip(text: string): string {
  return text.length > MAX_TOOL_RESULT_CHARS ? `${text.slice(0, MAX_TOOL_RESULT_CHARS)}…(truncated)` : text;
}

async function callTool(ctx: BlockContext, tool: ToolConfig, args: Record<string, unknown>): Promise<unknown> {
  if (tool.type === 'workflow') {
    if (!ctx.ports.workflows) throw new Error('child workflows are not available in this context');
    if (ctx.depth >= MAX_WORKFLOW_DEPTH) throw new Error(`maximum workflow nesting depth of ${MAX_WORKFLOW_DEPTH} reached`);
    const res = await ctx.runChild(String(tool.workflowId), args);
    if (!res.success) throw new Error(`workflow ${tool.workflowId} failed: ${res.error ?? 'unknown error'}`);
    return res.output ?? null;
  }
  const method = String(tool.method ?? 'POST').toUpperCase();
  let url: URL;
  try {
    url = new URL(String(tool.url).trim());
  } catch {
    throw new Error(`invalid URL "${String(tool.url)}"`);
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(tool.headers ?? {})) if (v !== undefined && v !== null) headers[k] = textOf(v);
  let body: string | undefined;
  if (method === 'GET' || method === 'HEAD') {
    for (const [k, v] of Object.entries(args)) if (v !== undefined && v !== null) url.searchParams.append(k, textOf(v));
  } else {
    body = JSON.stringify(args);
    if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  const timeoutMs = Math.max(1, Math.min(tool.timeoutMs ?? 30_000, ctx.remainingMs()));
  const res = await ctx.ports.http.request({ url: url.toString(), method, headers, body, timeoutMs, signal: ctx.signal });
  let data: unknown = res.body;
  try {
    data = res.body.trim() ? (JSON.parse(res.body) as unknown) : null;
  } catch {
    // keep text
  }
  if (res.status >= 400) throw new Error(`HTTP ${res.status}: ${clip(typeof data === 'string' ? data : JSON.stringify(data)).slice(0, 2000)}`);
  return data;
}

export const agentBlock = defineBlockType<AgentConfig>({
  type: 'agent',
  config: agentConfigSchema,
  async run(ctx, config) {
    aiPortOf(ctx); // fails early without a model provider, before any MCP server is contacted
    const model = textOf(config.model);
    const temperature = numberOf(config.temperature, 'temperature', 0, 2);
    const maxTokens = numberOf(config.maxTokens, 'maxTokens', 1, 1_000_000);
    const rounds = Math.min(MAX_TOOL_ROUNDS, Math.max(1, Number(config.maxToolRounds ?? MAX_TOOL_ROUNDS)));
    const sessions: McpSession[] = [];
    try {
      return await answer(ctx, config, { model, temperature, maxTokens, rounds }, await expandTools(ctx, config, sessions));
    } finally {
      // MCP sessions (and their tool lists) end with the block's run.
      await Promise.allSettled(sessions.map((s) => s.close()));
    }
  },
});

/** Every tool of the agent, named and ready to call; names must be unique across all of them. */
async function expandTools(ctx: BlockContext, config: AgentConfig, sessions: McpSession[]): Promise<Map<string, ExpandedTool>> {
  const byName = new Map<string, ExpandedTool>();
  for (const t of config.tools ?? []) {
    let expanded: ExpandedTool[];
    if (t.type === 'connector') expanded = await connectorTools(ctx, t);
    else if (t.type === 'mcp') expanded = await mcpTools(ctx, t, sessions);
    else {
      const own = t;
      expanded = [{
        tool: { name: own.name, ...(own.description ? { description: textOf(own.description) } : {}), parameters: own.parameters ?? emptyObjectSchema },
        invoke: (args) => callTool(ctx, own, args),
      }];
    }
    for (const e of expanded) {
      if (byName.has(e.tool.name)) throw new Error(`two tools are named "${e.tool.name}"; tool names must be unique within an agent`);
      byName.set(e.tool.name, e);
    }
    if (byName.size > MAX_AGENT_TOOLS) throw new Error(`the agent offers more than ${MAX_AGENT_TOOLS} tools; choose fewer operations or MCP tools`);
  }
  return byName;
}

async function answer(
  ctx: BlockContext,
  config: AgentConfig,
  opts: { model: string; temperature: number | undefined; maxTokens: number | undefined; rounds: number },
  byName: Map<string, ExpandedTool>,
): Promise<BlockResult> {
  const ai = aiPortOf(ctx);
  const { model, temperature, maxTokens, rounds } = opts;
  const aiTools: AiTool[] = [...byName.values()].map((e) => e.tool);
  const responseSchema = config.responseFormat
    ? { name: config.responseFormat.name ?? 'response', schema: config.responseFormat.schema }
    : undefined;

  const messages: AiMessage[] = [];
  const system = textOf(config.systemPrompt);
  if (system.trim()) messages.push({ role: 'system', content: system });
  const user = textOf(config.userPrompt);
  if (!user.trim()) throw new Error('userPrompt is empty');
  messages.push({ role: 'user', content: user });

  const totals = new UsageTotals();
  const calls: { name: string; arguments: unknown; result?: unknown; error?: string }[] = [];
  const ask = async (withTools: boolean): Promise<ChatResponse> => {
    const r = await ai.chat({
      model, messages, temperature, maxTokens, responseSchema, signal: ctx.signal,
      ...(withTools && aiTools.length > 0 ? { tools: aiTools, toolChoice: config.toolChoice ?? 'auto' } : {}),
    });
    totals.add(r);
    return r;
  };

  let answer = await ask(true);
  for (let round = 0; answer.toolCalls.length > 0; round++) {
    if (round >= rounds) {
      ctx.log('warn', `tool loop stopped after ${rounds} rounds; asking for the answer without tools`);
      messages.push({ role: 'user', content: 'Tool budget exhausted. Answer now with what you have.' });
      answer = await ask(false);
      if (answer.toolCalls.length > 0) throw new Error(`the model kept calling tools after ${rounds} rounds`);
      break;
    }
    messages.push({ role: 'assistant', content: answer.content, toolCalls: answer.toolCalls });
    // Calls of one round run concurrently; their results go back in the order the model made them.
    const results = await Promise.all(answer.toolCalls.map(async (call: AiToolCall) => {
      const tool = byName.get(call.name);
      let args: Record<string, unknown> = {};
      try {
        if (!tool) throw new Error(`unknown tool "${call.name}"`);
        args = parseArgs(call.arguments);
        const result = await tool.invoke(args);
        calls.push({ name: call.name, arguments: args, result });
        ctx.log('info', `tool ${call.name} answered`);
        return clip(JSON.stringify(result ?? null));
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        const message = err instanceof Error ? err.message : String(err);
        calls.push({ name: call.name, arguments: args, error: message });
        ctx.log('warn', `tool ${call.name} failed: ${message}`);
        return JSON.stringify({ error: message });
      }
    }));
    answer.toolCalls.forEach((call, i) => messages.push({ role: 'tool', toolCallId: call.id, content: results[i] }));
    answer = await ask(true);
  }

  const output: Record<string, unknown> = {};
  if (responseSchema) {
    const parsed = parseJsonAnswer(answer.content, 'structured output');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) Object.assign(output, parsed);
    else output.value = parsed;
  }
  Object.assign(output, {
    content: answer.content ?? '',
    model: answer.model,
    tokens: { prompt: totals.promptTokens, completion: totals.completionTokens, total: totals.promptTokens + totals.completionTokens },
    cost: totals.cost(),
    toolCalls: calls,
    finishReason: answer.finishReason,
  });
  return { output };
}
