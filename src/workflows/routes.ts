import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf, type AccountsService } from '../accounts/service.js';
import { declaredFields, workflowDefinitionSchema } from '../engine/index.js';
import { badRequest } from '../http/errors.js';
import { decodeCursor, page } from '../http/pagination.js';
import { queryFlag } from '../http/query-params.js';
import { errorResponses, errorSchema } from '../http/schemas.js';
import { limitsSchema } from '../limits/schemas.js';
import type { LimitsService } from '../limits/service.js';
import { publicWorkflow, workflowSummary, type VersionSummaryRow, type WorkflowRow, type WorkflowService } from './service.js';

const workflowSchema = z.object({
  id: z.string(),
  workspaceId: z.string(),
  name: z.string(),
  description: z.string(),
  definition: z.unknown(),
  isDeployed: z.boolean(),
  deployedAt: z.string().nullable(),
  version: z.number().int().nullable().describe('Active deployed version number'),
  createdAt: z.string(),
  updatedAt: z.string(),
  webhookUrl: z.string().optional().describe('The webhook trigger URL while the workflow is deployed with a webhook block'),
  schedule: z.object({
    nextRunAt: z.array(z.string()).describe('The next tick times (ISO 8601); empty while disabled'),
    enabled: z.boolean(),
    disabledReason: z.string().nullable().describe('Why the schedule stopped firing (consecutive failed runs); a redeploy enables it again'),
    consecutiveFailures: z.number().int(),
  }).optional().describe('The schedule while the workflow is deployed with a schedule block'),
});
const summarySchema = workflowSchema.omit({ definition: true });
const workflowEnvelope = z.object({ success: z.literal(true), data: z.object({ workflow: workflowSchema }) });
/**
 * One workflow as both clients read it: Weft's `data.workflow` (with the draft definition), and the reference
 * service's fields at the top of `data` with `inputs` (the start block's declared fields) and `variables`.
 */
const workflowReadEnvelope = z.object({
  success: z.literal(true),
  data: summarySchema.extend({
    folderId: z.null().describe('Always null: Weft has no folders'),
    variables: z.record(z.string(), z.unknown()).describe('The draft\'s workflow variables'),
    inputs: z.array(z.object({ name: z.string(), type: z.string() }).catchall(z.unknown()))
      .describe('The input fields the draft\'s start block declares (name, type, required, default, description)'),
    workflow: workflowSchema,
  }),
  limits: limitsSchema,
});
const deploymentSchema = z.object({
  success: z.literal(true),
  data: z.object({
    id: z.string(), isDeployed: z.boolean(), deployedAt: z.string().nullable(), version: z.number().int().nullable(),
    warnings: z.array(z.string()).describe('Always empty: what Weft cannot deploy it refuses with a 400'),
  }),
  limits: limitsSchema,
});
const idParams = z.object({ id: z.string().min(1).max(128) });
const name = z.string().trim().min(1).max(200);

const versionSchema = z.object({
  id: z.string().describe('The version id (a run log\'s deploymentVersionId)'),
  version: z.number().int().describe('Version number, 1 for the first deploy'),
  isActive: z.boolean().describe('The version runs through the API, webhooks and schedules now'),
  createdAt: z.string().describe('When it was deployed'),
  deployedBy: z.string().nullable().describe('Id of the user who deployed it; null when a workspace key did'),
  name: z.string().nullable().describe('The name given when it was deployed'),
  description: z.string().nullable().describe('The description given when it was deployed'),
  blockCount: z.number().int().describe('Blocks in its definition, those inside loops and parallels included'),
  edgeCount: z.number().int().describe('Connections in its definition'),
});

const publicVersion = (v: VersionSummaryRow, activeId: string | null) => ({
  id: v.id,
  version: v.version,
  isActive: v.id === activeId,
  createdAt: v.created_at.toISOString(),
  deployedBy: v.created_by,
  name: v.name,
  description: v.description,
  blockCount: v.block_count,
  edgeCount: v.edge_count,
});

/** Version pages are keyed by version number: an opaque base64url of `{v}`. */
const versionCursor = (version: number) => Buffer.from(JSON.stringify({ v: version })).toString('base64url');
function beforeVersion(cursor: string | undefined): number | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  try {
    const v = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { v?: unknown }).v;
    if (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 2_147_483_647) return v;
  } catch {
    // fall through
  }
  throw badRequest('Invalid cursor');
}

const deployment = (row: WorkflowRow, limits: z.infer<typeof limitsSchema>) => {
  const w = workflowSummary(row);
  return { success: true as const, data: { id: w.id, isDeployed: w.isDeployed, deployedAt: w.deployedAt, version: w.version, warnings: [] }, limits };
};

/** A definition over WEFT_MAX_DEFINITION_BYTES (the body limit is larger). */
const definitionErrors = { ...errorResponses, 413: errorSchema.describe('The definition is over WEFT_MAX_DEFINITION_BYTES of JSON') };

/** Full webhook trigger URLs of the deployed ones among some workflows (base: WEFT_BASE_URL, else the request's). */
export type TriggerUrls = { urls(workflowIds: readonly string[], requestBase: string): Promise<Map<string, string>> };

/** Schedules of the deployed ones among some workflows (next run times, enabled, why disabled). */
export type ScheduleInfos = {
  info(workflowIds: readonly string[]): Promise<Map<string, { nextRunAt: string[]; enabled: boolean; disabledReason: string | null; consecutiveFailures: number }>>;
};

const requestBase = (request: { protocol: string; host: string }) => `${request.protocol}://${request.host}`;

/** Workflow definitions and deployments. */
export function workflowRoutes(workflows: WorkflowService, accounts: AccountsService, limits: LimitsService, triggers?: TriggerUrls, schedules?: ScheduleInfos): FastifyPluginAsyncZod {
  return async (app) => {
    const urlsOf = async (ids: string[], request: { protocol: string; host: string }) =>
      (triggers && ids.length > 0 ? await triggers.urls(ids, requestBase(request)) : new Map<string, string>());
    const schedulesOf = async (ids: string[]) => (schedules && ids.length > 0 ? await schedules.info(ids) : new Map());

    app.post('/api/v1/workflows', {
      schema: {
        tags: ['workflows'], summary: 'Create a workflow (draft)',
        body: z.object({
          workspaceId: z.string().min(1).max(128),
          name,
          description: z.string().max(10_000).optional(),
          definition: workflowDefinitionSchema,
        }),
        response: { 201: workflowEnvelope, ...definitionErrors },
      },
    }, async (request, reply) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const w = await workflows.createWorkflow(access.workspaceId, request.body, actorOf(access));
      return reply.code(201).send({ success: true as const, data: { workflow: publicWorkflow(w) } });
    });

    app.get('/api/v1/workflows', {
      schema: {
        tags: ['workflows'], summary: 'List workflows, oldest first, with cursor pagination',
        querystring: z.object({
          workspaceId: z.string().min(1).max(128),
          limit: z.coerce.number().int().min(1).max(100).default(50),
          cursor: z.string().max(512).optional(),
          deployedOnly: z.string().max(10).optional().describe('true/false/1/0 (default false): only deployed workflows'),
          folderId: z.string().max(128).optional().describe('Weft has no folders: no workflow is in one, so a folder id answers none'),
        }),
        response: {
          200: z.object({ success: z.literal(true), data: z.array(summarySchema), nextCursor: z.string().optional(), limits: limitsSchema.optional() }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      const after = decodeCursor(request.query.cursor);
      const deployedOnly = queryFlag('deployedOnly', request.query.deployedOnly) ?? false;
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
      const rows = request.query.folderId?.trim() ? [] : await workflows.list(access.workspaceId, request.query.limit + 1, after, deployedOnly);
      const p = page(rows, request.query.limit, (r) => ({ t: r.created_at.toISOString(), id: r.id }));
      const deployed = p.data.filter((r) => r.active_version_id !== null).map((r) => r.id);
      const urls = await urlsOf(deployed, request);
      const scheduled = await schedulesOf(deployed);
      return {
        success: true as const,
        data: p.data.map((r) => {
          const rest = workflowSummary(r);
          const webhookUrl = urls.get(r.id);
          const schedule = scheduled.get(r.id);
          return { ...rest, ...(webhookUrl ? { webhookUrl } : {}), ...(schedule ? { schedule } : {}) };
        }),
        ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}),
        // The reference adds the caller's execution limits to v1 list responses.
        limits: await limits.snapshot(access.billedAccount, access.plan),
      };
    });

    app.get('/api/v1/workflows/:id', {
      schema: { tags: ['workflows'], summary: 'Get a workflow with its draft definition', params: idParams, response: { 200: workflowReadEnvelope, ...errorResponses } },
    }, async (request) => {
      const { access } = await workflows.forCaller(request.auth, request.params.id, 'read');
      const w = await workflows.getWorkflow(access.workspaceId, request.params.id);
      const webhookUrl = w.active_version_id !== null ? (await urlsOf([w.id], request)).get(w.id) : undefined;
      const schedule = w.active_version_id !== null ? (await schedulesOf([w.id])).get(w.id) : undefined;
      const workflow = { ...publicWorkflow(w), ...(webhookUrl ? { webhookUrl } : {}), ...(schedule ? { schedule } : {}) };
      const { definition: _definition, ...fields } = workflow;
      return {
        success: true as const,
        data: { ...fields, folderId: null, variables: w.definition.variables ?? {}, inputs: declaredFields(w.definition) ?? [], workflow },
        limits: await limits.snapshot(access.billedAccount, access.plan),
      };
    });

    app.put('/api/v1/workflows/:id', {
      schema: {
        tags: ['workflows'], summary: 'Replace the draft definition (the deployed version is unchanged until the next deploy)',
        params: idParams,
        body: z.object({ name: name.optional(), description: z.string().max(10_000).optional(), definition: workflowDefinitionSchema }),
        response: { 200: workflowEnvelope, ...definitionErrors },
      },
    }, async (request) => {
      const { access } = await workflows.forCaller(request.auth, request.params.id, 'write');
      const w = await workflows.updateWorkflow(access.workspaceId, request.params.id, request.body, actorOf(access));
      return { success: true as const, data: { workflow: publicWorkflow(w) } };
    });

    app.delete('/api/v1/workflows/:id', {
      schema: {
        tags: ['workflows'], summary: 'Delete a workflow and its versions', params: idParams,
        response: { 200: z.object({ success: z.literal(true), data: z.object({ id: z.string(), deleted: z.literal(true) }) }), ...errorResponses },
      },
    }, async (request) => {
      const { access } = await workflows.forCaller(request.auth, request.params.id, 'write');
      await workflows.deleteWorkflow(access.workspaceId, request.params.id, actorOf(access));
      return { success: true as const, data: { id: request.params.id, deleted: true as const } };
    });

    app.post('/api/v1/workflows/:id/deploy', {
      schema: {
        tags: ['workflows'], summary: 'Deploy the draft as a new immutable version and activate it (workspace admins)', params: idParams,
        // Optional as in the reference: the version's name and description, shown in the versions list.
        body: z.object({
          name: z.string().trim().min(1).max(100).optional(),
          description: z.string().max(50_000).nullish(),
        }).strict().nullish(),
        response: { 200: deploymentSchema, ...definitionErrors },
      },
    }, async (request) => {
      const { access } = await workflows.forCaller(request.auth, request.params.id, 'admin');
      const w = await workflows.deployWorkflow(access.workspaceId, request.params.id, actorOf(access), request.body ?? {});
      return deployment(w, await limits.snapshot(access.billedAccount, access.plan));
    });

    app.delete('/api/v1/workflows/:id/deploy', {
      schema: { tags: ['workflows'], summary: 'Undeploy (workspace admins)', params: idParams, response: { 200: deploymentSchema, ...errorResponses } },
    }, async (request) => {
      const { access } = await workflows.forCaller(request.auth, request.params.id, 'admin');
      const w = await workflows.undeployWorkflow(access.workspaceId, request.params.id, actorOf(access));
      return deployment(w, await limits.snapshot(access.billedAccount, access.plan));
    });

    app.post('/api/v1/workflows/:id/rollback', {
      schema: {
        tags: ['workflows'], summary: 'Activate an earlier version (default: the one before the active version)',
        params: idParams,
        // Optional as in the reference: a POST without a body (Fastify hands the schema null) rolls back one version.
        body: z.object({ version: z.number().int().min(1).max(1_000_000).optional() }).strict().nullish(),
        response: { 200: deploymentSchema, ...errorResponses },
      },
    }, async (request) => {
      const { access } = await workflows.forCaller(request.auth, request.params.id, 'admin');
      const w = await workflows.rollbackWorkflow(access.workspaceId, request.params.id, request.body?.version, actorOf(access));
      return deployment(w, await limits.snapshot(access.billedAccount, access.plan));
    });

    app.get('/api/v1/workflows/:id/versions', {
      schema: {
        tags: ['workflows'], summary: 'Deployed versions of a workflow, newest first, with cursor pagination',
        params: idParams,
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(100).default(50),
          cursor: z.string().max(512).optional(),
        }),
        response: {
          200: z.object({ success: z.literal(true), data: z.array(versionSchema), nextCursor: z.string().optional(), limits: limitsSchema.optional() }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      const before = beforeVersion(request.query.cursor);
      const { access, workflow } = await workflows.forCaller(request.auth, request.params.id, 'read');
      const rows = await workflows.listVersions(workflow.id, request.query.limit + 1, before);
      const data = rows.slice(0, request.query.limit);
      return {
        success: true as const,
        data: data.map((v) => publicVersion(v, workflow.active_version_id)),
        ...(rows.length > request.query.limit ? { nextCursor: versionCursor(data[data.length - 1].version) } : {}),
        limits: await limits.snapshot(access.billedAccount, access.plan),
      };
    });

    app.get('/api/workflows/:id/status', {
      // Sim's flat body with a code (404 WORKFLOW_NOT_FOUND), which its SDKs read.
      config: { rateLimitHeaders: false, errorFamily: 'coded' },
      schema: {
        tags: ['workflows'], summary: 'Deployment status (Sim SDKs: getWorkflowStatus, validateWorkflow)', params: idParams,
        response: {
          200: z.object({
            isDeployed: z.boolean(), deployedAt: z.string().nullable(),
            needsRedeployment: z.boolean().describe('The saved draft differs from the deployed version (false while not deployed)'),
            version: z.number().int().nullable(),
          }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      // The row without its draft: the comparison reads the digests the database keeps, never a definition.
      const { workflow: row } = await workflows.forCaller(request.auth, request.params.id, 'read');
      const w = workflowSummary(row);
      return { isDeployed: w.isDeployed, deployedAt: w.deployedAt, needsRedeployment: await workflows.needsRedeployment(row), version: w.version };
    });
  };
}
