// Connector: calls one operation of a workspace connector (an OpenAPI document registered through
// /api/v1/connectors). The connectors port validates the parameters and body against the operation's
// schemas and adds the auth from the connector's secret; the request then goes through the HTTP port
// (SSRF-guarded like the http block). Output {status, headers, data}; a status >= 400 is a block error.
import { z } from 'zod';
import { defineBlockType, type BlockContext } from '../block-type.js';
import { formatInterpolated } from '../references.js';

export const connectorConfigSchema = z.strictObject({
  connectorId: z.string().min(1).max(256),
  operationId: z.string().min(1).max(256),
  parameters: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
  body: z.unknown().optional(),
  timeoutMs: z.number().int().min(1).max(300_000).default(30_000),
});

export type ConnectorConfig = z.infer<typeof connectorConfigSchema>;

/** Response body as JSON when it says so (or looks like it), else text. */
export function responseData(contentType: string | undefined, body: string): unknown {
  if (body.trim() === '' || !(contentType && /[/+]json\b/i.test(contentType))) return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

/** Calls a connector operation; shared by the block and the agent's connector tools. */
export async function callConnector(
  ctx: BlockContext,
  args: { connectorId: string; operationId: string; parameters?: unknown; body?: unknown; timeoutMs: number },
): Promise<{ status: number; headers: Record<string, string>; data: unknown }> {
  const port = ctx.ports.connectors;
  if (!port) throw new Error('connectors are not available in this context');
  let parameters = args.parameters;
  // A whole-object reference resolves to an object; a text one may hold JSON.
  if (typeof parameters === 'string' && parameters.trim().startsWith('{')) {
    try {
      parameters = JSON.parse(parameters) as unknown;
    } catch {
      throw new Error('parameters must be an object (the text given is not valid JSON)');
    }
  }
  const req = await port.prepare({
    connectorId: args.connectorId, operationId: args.operationId, parameters, body: args.body, secret: (name) => ctx.secret(name),
  });
  const timeoutMs = Math.max(1, Math.min(args.timeoutMs, ctx.remainingMs()));
  // The answer is a block's output (or an agent's tool result, bounded the same way): refused over the block
  // output cap before it is parsed (docs/architecture.md, "Where limits are enforced").
  const res = await ctx.ports.http.request({ ...req, timeoutMs, signal: ctx.signal, blockOutput: true });
  if (res.status >= 400) {
    const preview = res.body.length > 300 ? `${res.body.slice(0, 300)}…` : res.body;
    throw new Error(`HTTP ${res.status} from ${args.operationId} (${req.method} ${new URL(req.url).pathname})${preview ? `: ${preview}` : ''}`);
  }
  return { status: res.status, headers: res.headers, data: responseData(res.headers['content-type'], res.body) };
}

export const connectorBlock = defineBlockType<ConnectorConfig>({
  type: 'connector',
  config: connectorConfigSchema,
  outputFields: () => ['status', 'headers', 'data'],
  async run(ctx, config) {
    const connectorId = formatInterpolated(config.connectorId).trim();
    const operationId = formatInterpolated(config.operationId).trim();
    if (!connectorId) throw new Error('connectorId is empty');
    if (!operationId) throw new Error('operationId is empty');
    const output = await callConnector(ctx, {
      connectorId, operationId, parameters: config.parameters, body: config.body, timeoutMs: Number(config.timeoutMs ?? 30_000),
    });
    return { output };
  },
});
