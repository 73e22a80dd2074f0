import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AccessControlled } from '../accounts/service.js';
import type { AppContext } from '../context.js';
import { requireAuth, type AuthContext } from '../http/auth.js';
import { badRequest, errorBody } from '../http/errors.js';
import { decodeCursor, page } from '../http/pagination.js';
import { workspaceAccountOf, workspaceIdParam } from '../limits/usage.js';
import type { Billing } from './completion.js';
import type { AiGateway } from './gateway.js';
import { formatUsd, roundUsd } from './money.js';
import { SSE_DONE, sseData } from './sse.js';
import type { ChatCompletionChunk, ChatRequest } from './providers/types.js';

// ---------------------------------------------------------------------------------------------
// Schemas (they validate requests and feed /api/openapi.json)
// ---------------------------------------------------------------------------------------------

const contentPart = z.object({
  type: z.string().min(1).max(64).describe('text, image_url, ...'),
  text: z.string().optional(),
  image_url: z.object({ url: z.string().min(1), detail: z.string().optional() }).loose().optional(),
}).loose();

const toolCall = z.object({
  id: z.string().min(1).max(256),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1).max(128), arguments: z.string() }).loose(),
}).loose();

const message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(contentPart).max(1000)]).nullable().optional(),
  name: z.string().max(256).optional(),
  tool_calls: z.array(toolCall).max(256).optional(),
  tool_call_id: z.string().max(256).optional(),
}).loose().superRefine((m, ctx) => {
  if (m.role === 'tool' && !m.tool_call_id) ctx.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'A tool message needs tool_call_id' });
  if (m.role !== 'assistant' && (m.content === undefined || m.content === null)) {
    ctx.addIssue({ code: 'custom', path: ['content'], message: `A ${m.role} message needs content` });
  }
  if (m.role === 'assistant' && (m.content === undefined || m.content === null) && !m.tool_calls?.length) {
    ctx.addIssue({ code: 'custom', path: ['content'], message: 'An assistant message needs content or tool_calls' });
  }
});

const functionName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'Function names are 1 to 64 letters, digits, underscores or dashes');

const tool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: functionName,
    description: z.string().max(10_000).optional(),
    parameters: z.record(z.string(), z.unknown()).optional().describe('JSON schema of the arguments'),
    strict: z.boolean().nullable().optional(),
  }).loose(),
}).loose();

const toolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: functionName }) }),
]);

const responseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: functionName,
      description: z.string().max(10_000).optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);

export const chatRequestSchema = z.object({
  model: z.string().min(1).max(256).describe('Model slug, see GET /api/v1/ai/models'),
  messages: z.array(message).min(1).max(10_000),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  max_tokens: z.number().int().min(1).max(1_000_000).nullable().optional().describe('Maximum tokens generated'),
  max_completion_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
  n: z.number().int().min(1).max(8).nullable().optional(),
  stream: z.boolean().nullable().optional().describe('true returns server-sent events'),
  stream_options: z.object({ include_usage: z.boolean().optional() }).loose().nullable().optional(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullable().optional(),
  tools: z.array(tool).max(128).optional(),
  tool_choice: toolChoice.optional(),
  response_format: responseFormat.optional(),
}).loose().describe('Chat-completions request');

const usageSchema = z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() }).loose();

const completionSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(z.object({
    index: z.number().int(),
    message: z.object({
      role: z.literal('assistant'),
      content: z.string().nullable(),
      tool_calls: z.array(toolCall).optional(),
    }).loose(),
    finish_reason: z.string().nullable(),
  }).loose()),
  usage: usageSchema.optional(),
}).loose().describe('Completion response; with stream: true the body is text/event-stream of chat.completion.chunk objects ending with data: [DONE]');

const aiError = z.object({
  error: z.object({ message: z.string(), type: z.string(), code: z.string().nullable(), param: z.unknown().optional() }),
}).describe('Error');

const aiErrors = { 400: aiError, 401: aiError, 402: aiError, 404: aiError, 429: aiError, 500: aiError, 502: aiError } as const;

const modelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })),
});

const balanceSchema = z.object({
  account: z.string().describe("The billed account: 'workspace:<id>' for workspace keys, 'user:<id>' for personal keys"),
  balanceUsd: z.number().describe('What can still be spent (open deposits already taken out)'),
  reservedUsd: z.number().describe('Deposits held by requests in flight'),
  updatedAt: z.string().nullable(),
});

const ledgerEntrySchema = z.object({
  id: z.string(),
  kind: z.enum(['grant', 'reserve', 'settle', 'release', 'overage']),
  amountUsd: z.number().describe('Change to the balance (a settle returns the deposit and takes the cost; an overage changes nothing)'),
  balanceAfterUsd: z.number(),
  costUsd: z.number().nullable()
    .describe('settle: what the request was charged (at most its deposit); overage: the cost reported beyond the deposit, not charged'),
  requestId: z.string().nullable(),
  model: z.string().nullable(),
  note: z.string().nullable(),
  createdAt: z.string(),
});

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/**
 * Who pays for a key's requests: the accounts area decides (a workspace key its workspace, a personal key
 * its user); and who may read a workspace's own account (its admins and keys).
 */
export interface BilledAccounts extends AccessControlled {
  billedAccount(auth: AuthContext): Promise<{ account: string }>;
}

/** `?workspaceId=` of the credit routes: read the workspace's account instead of the caller's. */
const accountQuery = {
  workspaceId: workspaceIdParam.optional()
    .describe("Report the workspace's billed account (workspace:<id>) instead of the caller's: workspace admins and the workspace's own keys"),
};

/** The account a credits route reports: the workspace's when asked for (and allowed), else the caller's. */
async function reportedAccount(accounts: BilledAccounts, request: FastifyRequest, workspaceId: string | undefined): Promise<string> {
  if (workspaceId) return (await workspaceAccountOf(accounts, requireAuth(request), workspaceId)).account;
  return (await billingOf(accounts, request)).account;
}

async function billingOf(accounts: BilledAccounts, request: FastifyRequest): Promise<Billing> {
  const auth = requireAuth(request);
  const { account } = await accounts.billedAccount(auth);
  const workspaceId = auth.keyType === 'workspace' ? auth.keyWorkspaceId : null;
  return { source: 'api', httpRequestId: request.id, apiKeyId: auth.keyId, account, workspaceId };
}

/** Drops explicit nulls of optional fields so providers see "not set". */
function normalize(body: z.infer<typeof chatRequestSchema>): ChatRequest {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (v !== null && v !== undefined) out[k] = v;
  // An empty tool list means no tools (OpenAI itself refuses `tools: []`).
  if (Array.isArray(out.tools) && out.tools.length === 0) {
    delete out.tools;
    delete out.tool_choice;
  }
  return out as ChatRequest;
}

/** Writes to the SSE response, waiting for the socket to drain; false once the client is gone. */
async function write(reply: FastifyReply, text: string): Promise<boolean> {
  const res = reply.raw;
  if (res.destroyed || res.writableEnded) return false;
  if (res.write(text)) return true;
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

// ---------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------

/**
 * The AI area's routes over its gateway (built by the composition root, which also starts and stops the
 * gateway's abandoned-deposit sweep).
 */
export function aiRoutes(gateway: AiGateway, accounts: BilledAccounts): FastifyPluginAsyncZod<{ ctx: AppContext }> {
  return async (app) => {
    const routeConfig = { auth: 'bearer' as const, errorFamily: 'ai' as const };
    const security: Record<string, string[]>[] = [{ apiKey: [] }, { bearer: [] }];

    app.post('/api/v1/ai/chat/completions', {
      schema: {
        tags: ['ai'], summary: 'Create a chat completion (OpenAI-compatible); billed against the credit balance', security,
        body: chatRequestSchema,
        response: { 200: completionSchema, ...aiErrors },
      },
      config: routeConfig,
    }, async (request, reply) => {
      const billing = await billingOf(accounts, request);
      const body = normalize(request.body);
      if (!body.stream) {
        const r = await gateway.complete(billing, body);
        reply.header('X-Credits-Used', formatUsd(r.costNano)).header('X-Credits-Remaining', formatUsd(r.balanceAfterNano))
          .header('X-Weft-Key-Source', r.keySource);
        return r.completion as z.infer<typeof completionSchema>;
      }

      // Streaming. The client going away aborts the upstream call; what was generated is settled.
      const abort = new AbortController();
      const onClose = () => {
        if (!reply.raw.writableFinished) abort.abort();
      };
      reply.raw.on('close', onClose);
      let session;
      try {
        session = await gateway.startStream(billing, body, abort.signal);
      } catch (err) {
        reply.raw.off('close', onClose);
        throw err;
      }
      const includeUsage = body.stream_options?.include_usage === true;
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
        // Sent before the cost is known: the deposit and the balance after it. The settled figures
        // follow as HTTP trailers of the same names.
        'x-credits-used': formatUsd(session.depositNano),
        'x-credits-remaining': formatUsd(session.balanceAfterReserveNano),
        // Whose provider key pays: the workspace's own (a secret named for the provider) or the operator's.
        'x-weft-key-source': session.keySource,
        trailer: 'X-Credits-Used, X-Credits-Remaining',
      });
      let outcome: 'completed' | 'aborted' | 'failed' = 'completed';
      let failure: unknown;
      try {
        for await (const chunk of session.chunks) {
          const c: ChatCompletionChunk = chunk;
          if (c.choices.length === 0) {
            if (!includeUsage || !c.usage) continue;
          } else if (!includeUsage) {
            delete c.usage;
          }
          if (!(await write(reply, sseData(c)))) {
            outcome = 'aborted';
            break;
          }
        }
      } catch (err) {
        if (abort.signal.aborted) outcome = 'aborted';
        else {
          outcome = 'failed';
          failure = err;
          const httpErr = gateway.toHttpError(err) as { status?: number; message?: string; extra?: Record<string, unknown> };
          request.log.warn({ err }, 'AI stream failed mid-way');
          await write(reply, sseData(errorBody('ai', httpErr.status ?? 502, httpErr.message ?? 'The provider failed', httpErr.extra ?? {})));
        }
      }
      if (outcome === 'aborted') abort.abort(); // the upstream call stops too
      else await write(reply, SSE_DONE);
      const settled = await session.finish(outcome, failure).catch((err: unknown) => {
        request.log.error({ err }, 'settling an AI stream failed');
        return undefined;
      });
      reply.raw.off('close', onClose);
      if (!reply.raw.destroyed && !reply.raw.writableEnded) {
        if (settled) {
          reply.raw.addTrailers({
            'X-Credits-Used': formatUsd(settled.costNano),
            'X-Credits-Remaining': formatUsd(settled.balanceAfterNano),
          });
        }
        reply.raw.end();
      }
    });

    app.get('/api/v1/ai/models', {
      schema: {
        tags: ['ai'], summary: 'Models available through the gateway (only those of configured providers)', security,
        response: { 200: modelListSchema, ...aiErrors },
      },
      config: routeConfig,
    }, async () => {
      const models = await gateway.catalog.list();
      return {
        object: 'list' as const,
        data: models.map((m) => ({ id: m.id, object: 'model' as const, created: m.created, owned_by: m.provider })),
      };
    });

    app.get('/api/v1/ai/credits', {
      schema: {
        tags: ['ai'], summary: "Credit balance of the caller's billed account (or, with workspaceId, of the workspace's)", security,
        querystring: z.object(accountQuery),
        response: { 200: balanceSchema, ...aiErrors, 403: aiError },
      },
      config: routeConfig,
    }, async (request) => {
      const account = await reportedAccount(accounts, request, request.query.workspaceId);
      const b = await gateway.balance(account);
      return {
        account,
        balanceUsd: roundUsd(b?.balanceNano ?? 0),
        reservedUsd: roundUsd(b?.reservedNano ?? 0),
        updatedAt: b ? b.updatedAt.toISOString() : null,
      };
    });

    app.get('/api/v1/ai/credits/ledger', {
      schema: {
        tags: ['ai'],
        summary: "Movements of the caller's credit balance (or, with workspaceId, of the workspace's), newest first (grant, reserve, settle, release, overage)",
        security,
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(200).default(50),
          cursor: z.string().max(512).optional(),
          ...accountQuery,
        }),
        response: { 200: z.object({ data: z.array(ledgerEntrySchema), nextCursor: z.string().optional() }), ...aiErrors, 403: aiError },
      },
      config: routeConfig,
    }, async (request) => {
      const account = await reportedAccount(accounts, request, request.query.workspaceId);
      const { limit, cursor } = request.query;
      const after = decodeCursor(cursor);
      if (after && !/^\d{1,18}$/.test(after.id)) throw badRequest('Invalid cursor');
      const rows = await gateway.ledgerEntries(account, limit + 1, after ? Number(after.id) : undefined);
      const p = page(rows, limit, (r) => ({ t: r.created_at.toISOString(), id: String(r.id) }));
      return {
        data: p.data.map((r) => ({
          id: String(r.id),
          kind: r.kind,
          amountUsd: roundUsd(r.amount_nano),
          balanceAfterUsd: roundUsd(r.balance_after_nano),
          costUsd: r.cost_nano === null ? null : roundUsd(r.cost_nano),
          requestId: r.request_id,
          model: r.model,
          note: r.note,
          createdAt: r.created_at.toISOString(),
        })),
        ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}),
      };
    });
  };
}
