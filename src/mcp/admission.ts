// What an MCP request costs in the caller's api bucket, and the JSON-RPC -32602 of malformed params.
//
// Every JSON-RPC message of a request is paid for. A valid tools/call (a request whose params parse, naming
// a tool of the workspace, with arguments its schema accepts) runs a workflow and is admitted as a run (the
// sync bucket, a concurrency slot, the charge; tool-call.ts), so it takes nothing here. Every other message
// takes one token of the caller's api bucket: initialize, ping, tools/list, notifications, responses, an
// unknown method, and a tools/call with malformed params, an unknown tool or arguments that do not match (it
// read the workspace's tools and answered, so it is work like a listing). A request's tokens are taken at
// once, all or none, before its messages are handled; one the bucket cannot cover is refused as a whole
// (429 with Retry-After, the answer of the API rate limit, /api/v1) and spends nothing.
import type { BucketState } from '../limits/token-bucket.js';
import type { LimitsService } from '../limits/service.js';
import type { ToolCatalog } from './tool-catalog.js';
import { checkArguments } from './tool-input.js';

/** JSON-RPC 2.0: the method exists but its params are not what it takes. */
export const INVALID_PARAMS = -32602;

interface Issue { path: readonly PropertyKey[]; message: string }
/** A request schema of the MCP SDK (zod): all this module needs of one. */
export interface RequestSchema {
  safeParse(value: unknown): { success: true; data: unknown } | { success: false; error: { issues: readonly Issue[] } };
}
/** The SDK's schema of each request method this server answers, by method. */
export type RequestSchemas = Readonly<Record<string, RequestSchema>>;

type Message = Record<string, unknown>;
type Id = string | number;

const isRecord = (v: unknown): v is Message => v !== null && typeof v === 'object' && !Array.isArray(v);
const requestId = (m: Message): Id | undefined => (typeof m.id === 'string' || typeof m.id === 'number' ? m.id : undefined);

/**
 * The JSON-RPC error answering a request whose params its method does not take (-32602 "Invalid params",
 * naming the first problems), else undefined. Only methods in `schemas` are checked: others are answered
 * by the SDK (-32601 for a method it does not offer).
 */
export function invalidParamsError(schemas: RequestSchemas, message: unknown):
  { jsonrpc: '2.0'; id: Id; error: { code: number; message: string } } | undefined {
  if (!isRecord(message) || typeof message.method !== 'string') return undefined;
  const id = requestId(message);
  const schema = Object.hasOwn(schemas, message.method) ? schemas[message.method] : undefined;
  if (id === undefined || !schema) return undefined;
  const parsed = schema.safeParse(message);
  if (parsed.success) return undefined;
  const problems = parsed.error.issues.slice(0, 3).map((i) => `${i.path.map(String).join('.') || 'request'}: ${i.message}`);
  return { jsonrpc: '2.0', id, error: { code: INVALID_PARAMS, message: `Invalid params: ${problems.join('; ')}` } };
}

/** A tools/call request whose params parse: what it asks for (its tool still to be looked up). */
interface ToolCallAsk { name: string; arguments: unknown }

function toolCallAsk(schemas: RequestSchemas, m: unknown): ToolCallAsk | undefined {
  if (!isRecord(m) || m.method !== 'tools/call' || requestId(m) === undefined) return undefined;
  if (invalidParamsError(schemas, m)) return undefined;
  const params = m.params as { name: string; arguments?: unknown };
  return { name: params.name, arguments: params.arguments };
}

/** True when the call would be admitted as a run: its tool exists and takes its arguments. */
async function runsAWorkflow(catalog: ToolCatalog, ask: ToolCallAsk): Promise<boolean> {
  const tool = await catalog.find(ask.name);
  return tool !== undefined && checkArguments(tool.fields, ask.arguments).ok;
}

/** Why a request needing `needed` tokens was refused, for the 429's message. */
function notCovered(state: BucketState, needed: number): string {
  return needed > state.limit
    ? `this request holds ${needed} JSON-RPC messages that each take an API token, more than the ${state.limit} the API rate limit ever allows at once; send fewer per request`
    : `this request holds ${needed} JSON-RPC messages that each take an API token and ${state.remaining} were left. Please retry after ${state.resetAt.toISOString()}`;
}

/**
 * Takes what a request's messages cost from the caller's api bucket, all at once, or refuses the request
 * (429). Messages known to cost a token without looking at the workspace's tools are checked against the
 * bucket first, so an empty bucket refuses them without reading the tools.
 */
export async function admitMessages(opts: {
  limits: LimitsService;
  /** The caller's billed account and plan (read only when something is to be paid). */
  billed: () => Promise<{ account: string; plan: string }>;
  schemas: RequestSchemas;
  catalog: ToolCatalog;
  body: unknown;
}): Promise<void> {
  const messages = Array.isArray(opts.body) ? opts.body as unknown[] : [opts.body];
  const asks: ToolCallAsk[] = [];
  let needed = 0;
  for (const m of messages) {
    const ask = toolCallAsk(opts.schemas, m);
    if (ask) asks.push(ask);
    else needed += 1;
  }
  let billed: { account: string; plan: string } | undefined;
  if (needed > 0) {
    billed = await opts.billed();
    const known = needed;
    await opts.limits.checkApi(billed.account, billed.plan, known, (state) => notCovered(state, known));
  }
  for (const ask of asks) if (!(await runsAWorkflow(opts.catalog, ask))) needed += 1;
  if (needed === 0) return;
  billed ??= await opts.billed();
  const total = needed;
  await opts.limits.admitApi(billed.account, billed.plan, total, (state) => notCovered(state, total));
}
