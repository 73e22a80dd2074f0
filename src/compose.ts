// The composition root: builds every service in dependency order and hands each what it needs through
// its constructor. Reading this file tells who depends on whom; nothing registers itself anywhere else.
import { AccountsService } from './accounts/service.js';
import { AiGateway } from './ai/gateway.js';
import { deleteAuditBefore } from './audit/audit-log.js';
import type { AppContext } from './context.js';
import type { Queryable } from './db/database.js';
import { realClock, type EnginePorts } from './engine/index.js';
import { Lifecycles } from './lifecycle.js';
import { mcpPort } from './connectors/mcp-client.js';
import { connectorStorageBytes, ConnectorsService, MAX_SPEC_BYTES } from './connectors/service.js';
import { createLimits } from './limits/factory.js';
import { PlanAdministration } from './limits/plan-admin.js';
import type { LimitsService } from './limits/service.js';
import { GuardedHttp } from './net/guarded-http.js';
import { createObservability, workerMetricsListener, type Observability, type Observer } from './observability/index.js';
import { pingRedis } from './queue/redis-ping.js';
import { BullMqQueue } from './queue/bullmq.js';
import { InProcessQueue } from './queue/in-process.js';
import type { JobQueue } from './queue/port.js';
import { PostgresQueue } from './queue/postgres.js';
import { DEFAULT_RETENTION_BATCH, RunRetention, vacuumRunTables } from './runs/retention.js';
import type { RunContext } from './runs/run-context.js';
import { ExecutionService } from './runs/service.js';
import { createEmbedders } from './knowledge/embedders.js';
import { IngestWorkerPool } from './knowledge/ingest-pool.js';
import { KnowledgeService, knowledgeStorageBytes } from './knowledge/service.js';
import { SharedJobQueue } from './queue/shared.js';
import { scryptHasher, type PasswordHasher } from './sessions/password.js';
import { SecretsService } from './secrets/service.js';
import { SessionService } from './sessions/service.js';
import { ProcessSandbox } from './sandbox/process-sandbox.js';
import { checkJavaScriptSyntax } from './sandbox/syntax.js';
import { systemClock, type SchedulerClock } from './schedules/clock.js';
import { checkScheduleConfig, ScheduleRegistry } from './schedules/registry.js';
import { Scheduler } from './schedules/scheduler.js';
import { TablesService, tableStorageBytes } from './tables/service.js';
import { WebhookRegistry } from './webhooks/registry.js';
import { WebhookService, webhookFileBytes } from './webhooks/service.js';
import { deleteFilesBefore as deleteWebhookFilesBefore } from './webhooks/store.js';
import { WorkflowService, workflowStorageBytes } from './workflows/service.js';
import { QUERY_COOLDOWN_FACTOR, QueryTimeout } from './limits/query-timeout.js';
import { WorkspaceGate } from './limits/workspace-gate.js';

/** The areas' services, built once per process. */
export interface CoreServices {
  accounts: AccountsService;
  limits: LimitsService;
  plans: PlanAdministration;
  workflows: WorkflowService;
  tables: TablesService;
  ai: AiGateway;
  webhookRegistry: WebhookRegistry;
  scheduleRegistry: ScheduleRegistry;
  /** The dashboard's sign-in: passwords and browser sessions. */
  sessions: SessionService;
  /** Workspace secrets, encrypted at rest; resolved for runs through the engine's secrets port. */
  secrets: SecretsService;
  /**
   * Everything with a start or a stop (workers, timers, listeners, connections), in start order; stopped in
   * reverse. server.ts starts them once it listens and stops them after its last request; the CLI only stops.
   */
  lifecycles: Lifecycles;
  /** OpenAPI connectors: their operations are blocks and agent tools (docs/architecture.md, Connectors). */
  connectors: ConnectorsService;
  /** How many of a workspace's scans (table queries and filtered writes, knowledge searches) run at once. */
  scans: WorkspaceGate;
  /** On PostgreSQL, how long one statement of those scans may run. */
  queryTimeout: QueryTimeout;
}

export interface Services extends CoreServices {
  runs: ExecutionService;
  webhooks: WebhookService;
  knowledge: KnowledgeService;
  observer: Observability;
  /** Fires deployed schedules in worker processes (a lifecycle). */
  scheduler: Scheduler;
  /** Deletes finished runs' logs past WEFT_LOG_RETENTION_DAYS in worker processes (a lifecycle). */
  retention: RunRetention;
}

/** What tests replace: the schedules' clock (time and timers), the password hasher (to count checks). */
export interface ComposeOptions {
  clock?: SchedulerClock;
  passwords?: PasswordHasher;
}

/**
 * The services without the run machinery (no sandbox, queue or workers): what the CLI needs to manage
 * accounts, plans, workflows and credits.
 */
export function composeCore(
  ctx: AppContext, observer?: Observer, opts: ComposeOptions = {}, lifecycles = new Lifecycles(ctx.log),
): CoreServices {
  const { config, db } = ctx;
  const accounts = new AccountsService(db, {
    keyCacheMs: config.keyCacheMs, defaultPlan: config.defaultPlan, adminEmail: config.dashboard.adminEmail,
    // Pages' scoped tokens are signed with a secret the database does not hold (accounts/scoped-token.ts).
    tokenSecret: () => secrets.signingKey(),
  });
  // Session lookups are cached like key lookups: a sign-out elsewhere bites within the same few seconds.
  const sessions = new SessionService(db, accounts, {
    idleMs: config.dashboard.sessionIdleMs, maxMs: config.dashboard.sessionMaxMs, cacheMs: config.keyCacheMs, passwords: opts.passwords ?? scryptHasher(config.dashboard.passwordHashCost),
  });
  const limits = createLimits(config, db, {
    // Every area that stores bytes counts toward the workspace's storage.
    storageSources: [tableStorageBytes, webhookFileBytes, knowledgeStorageBytes, connectorStorageBytes, workflowStorageBytes],
    workspacePlan: (workspaceId, q) => accounts.workspacePlan(workspaceId, q),
    observer,
  });
  lifecycles.add({ name: 'limits', stop: () => limits.close() });
  // Webhook trigger paths follow deploys: the registry is told inside each deploy's transaction.
  const webhookRegistry = new WebhookRegistry(db, config.publicBaseUrl ?? config.baseUrl);
  // So do schedules (cron expressions are checked on save by croner, outside the engine).
  // The plan's minimum schedule interval, checked on save, on deploy and at each tick (none with limits off).
  const minScheduleInterval = async (workspaceId: string, q?: Queryable) => {
    const plan = await accounts.workspacePlan(workspaceId, q);
    return { plan, seconds: config.limitsEnabled ? limits.plan(plan).minScheduleIntervalSeconds : 0 };
  };
  const scheduleRegistry = new ScheduleRegistry(db, opts.clock ?? systemClock, minScheduleInterval);
  // A deleted secret answers with the deployed workflows that referenced it; saves check references against the names.
  const secrets: SecretsService = new SecretsService({
    db, log: ctx.log,
    keys: { key: config.encryption.key, previousKeys: config.encryption.previousKeys, databaseUrl: config.databaseUrl, dataDir: config.dataDir },
    providerKeyCacheMs: config.keyCacheMs,
    usedBy: (workspaceId, name) => workflows.deployedUsingSecret(workspaceId, name),
  });
  // A specUrl is fetched through the same outbound guard as the http block, bounded in size.
  const specHttp = new GuardedHttp({ allowPrivateNetwork: config.allowPrivateNetwork, maxResponseBytes: MAX_SPEC_BYTES });
  lifecycles.add({ name: 'connector document fetcher', stop: async () => specHttp.close() });
  const connectors = new ConnectorsService({ db, http: specHttp, secretNames: (workspaceId) => secrets.names(workspaceId), storage: limits.storage });
  const workflows: WorkflowService = new WorkflowService(db, accounts, {
    maxBlocks: config.maxBlocksPerWorkflow, maxDefinitionBytes: config.maxDefinitionBytes, checkCode: checkJavaScriptSyntax, checkConfig: checkScheduleConfig,
    storage: limits.storage,
    secretNames: (workspaceId) => secrets.names(workspaceId),
  },
    async (q, change) => {
      await webhookRegistry.deploymentChanged(q, change);
      await scheduleRegistry.deploymentChanged(q, change);
    },
    async (workspaceId, definition) => {
      await scheduleRegistry.checkPlanInterval(workspaceId, definition);
      // Connector blocks and agent connector tools must name a connector (and operations) of the workspace.
      await connectors.checkDefinition(workspaceId, definition);
    });
  // One gate for every area's tenant-shaped scans: a workspace runs a few at once (limits/workspace-gate.ts), each
  // may hold the database for the query timeout (limits/query-timeout.ts), and a workspace whose scan ran out of
  // that time runs none for six times as long.
  const queryTimeout = new QueryTimeout(config.queryTimeoutMs);
  const scans = new WorkspaceGate(config.scansPerWorkspace, undefined, QUERY_COOLDOWN_FACTOR * config.queryTimeoutMs);
  const tables = new TablesService(db, {
    storage: limits.storage, maxPageBytes: config.tablePageMaxBytes, queryTimeout, gate: scans, log: ctx.log,
  });
  const plans = new PlanAdministration(accounts, [(workspaceId, plan) => tables.applyPlan(workspaceId, plan)]);
  // A workspace that stores its own provider key (OPENAI_API_KEY, ...) as a secret pays the provider itself.
  const ai = new AiGateway(db, config.ai, {
    usage: limits.usage, log: ctx.log, observer, workspaceKey: (workspaceId, provider) => secrets.providerKey(workspaceId, provider),
  });
  // Returns the deposits a dead process left reserved, after the upstream timeout; on stop it also writes the
  // settlements waiting for their window. Entries stop in reverse, so this runs after the run workers have stopped.
  lifecycles.add({ name: 'AI deposit sweeper and settle flush', start: () => ai.start(), stop: () => ai.close() });
  return { accounts, limits, plans, workflows, tables, ai, webhookRegistry, scheduleRegistry, sessions, secrets, connectors, lifecycles, scans, queryTimeout };
}

/** Every service, including runs with their engine ports, sandbox and job queue. */
export function composeServices(ctx: AppContext, opts: ComposeOptions = {}): Services {
  const { config, db } = ctx;
  // Metrics, the request and run log lines, traces: every area reports to the same one.
  const observer = createObservability(ctx, { queueDepth: () => runs.queueDepth(), sandboxContexts: () => sandbox.contextStats, sandboxCrashes: () => sandbox.crashStats,
    workflowCaches: () => ({ ...workflows.cacheSizes() }),
  });
  // Stopped last: whatever stops before it may still report (traces are flushed on close).
  const lifecycles = new Lifecycles(ctx.log);
  lifecycles.add({ name: 'observability', stop: () => observer.close() });
  const metricsListener = workerMetricsListener(ctx, observer);
  if (metricsListener) lifecycles.add(metricsListener);
  const core = composeCore(ctx, observer, opts, lifecycles);
  const { accounts, limits, workflows, tables, ai } = core;
  // Async jobs (runs, document ingests, schedules, log retention) are run by worker processes only.
  const runsJobs = ctx.role !== 'api';

  // A fresh V8 context per run on a warm isolate, or one per call reused within the workspace
  // (docs/architecture.md, Sandbox contexts); slots shared fairly between workspaces; the isolates in a
  // process of their own (The sandbox process). Pure code needs no context at all (Pure code).
  const sandbox = new ProcessSandbox({
    contextPerRun: true, contexts: config.sandboxContexts, poolSize: config.sandboxPoolSize, pureCode: config.sandboxPureCode, log: ctx.log,
  });
  // The http and connector blocks' answers are refused over the block output cap before they are parsed.
  const http = new GuardedHttp({ allowPrivateNetwork: config.allowPrivateNetwork, blockOutputBytes: config.maxBlockOutputBytes });
  const remoteMcp = mcpPort(http);
  // Any worker process may take a job when scaled out: through BullMQ with Redis, through PostgreSQL
  // alone without it (SKIP LOCKED claims woken by LISTEN/NOTIFY). Embedded (PGlite): in-process.
  const onJobError = (err: unknown, jobId: string) => ctx.log.error({ err, jobId }, 'job failed');
  const queue: JobQueue = db.mode !== 'postgres'
    ? new InProcessQueue(config.workerConcurrency, onJobError)
    : config.redisUrl
      ? new BullMqQueue(config.redisUrl, config.workerConcurrency)
      // A dead process's claims lapse with its leases, so its jobs are delivered again by then.
      : new PostgresQueue({
        db, databaseUrl: config.databaseUrl!, concurrency: config.workerConcurrency, claimMs: config.jobLeaseMs, onError: onJobError, log: ctx.log,
      });
  // Async runs and document ingests share the queue and its workers; runs travel under bare ids.
  const jobs = new SharedJobQueue(queue, (jobId) => ctx.log.warn({ jobId }, 'no handler for this job kind in this process'));
  const runQueue: JobQueue = { ...jobs.channel(), close: (graceMs) => queue.close(graceMs) };

  const embedders = createEmbedders(config.knowledge.embeddings);
  const kc = config.knowledge;
  const ingestPool = new IngestWorkerPool({ workers: kc.ingestWorkers, heapMb: kc.workerHeapMb, parseTimeoutMs: kc.parseTimeoutMs });
  const knowledge = new KnowledgeService({
    db, log: ctx.log, embedders, jobs: jobs.channel('knowledge'), parser: ingestPool, storage: limits.storage, usage: limits.usage, gate: core.scans, queryTimeout: core.queryTimeout,
    usageCheck: (q, account, plan) => limits.refuseOverUsage(q, account, plan),
    options: {
      leaseMs: config.jobLeaseMs, maxInterruptions: config.maxJobInterruptions, maxFileBytes: kc.maxFileBytes,
      embeddingCostPerMillionTokens: kc.embeddings.costPerMillionTokensUsd,
      maxCrashRetries: kc.maxCrashRetries, timeoutMs: kc.ingestTimeoutMs, workerHeapMb: kc.workerHeapMb, bounds: kc.bounds,
    },
  });
  const runs: ExecutionService = new ExecutionService({
    db, config, log: ctx.log, queue: runQueue, limits, accounts, workflows,
    pingRedis: queue instanceof BullMqQueue ? () => pingRedis(config.redisUrl!) : undefined,
    // The scheduler counts its runs' outcomes (consecutive failures disable a schedule).
    observer: {
      runStarted: (e) => observer.runStarted(e),
      runFinished: (e) => {
        observer.runFinished(e);
        scheduler.runFinished(e);
      },
    },
    // The engine's ports for one run, scoped to its workspace and billed to its account.
    ports: (run: RunContext): EnginePorts => ({
      http,
      sandbox: sandbox.forTenant(run.workspaceId),
      clock: realClock,
      tables: tables.portFor(run.workspaceId, run.plan),
      ai: ai.portFor(run.billedAccount, run.workspaceId, run.executionId),
      knowledge: knowledge.portFor(run.workspaceId, run.billedAccount),
      secrets: core.secrets.portFor(run.workspaceId),
      connectors: core.connectors.portFor(run.workspaceId),
      // Remote MCP servers go through the same outbound guard as every other request of a run.
      mcp: remoteMcp,
      workflows: { run: (workflowId, input, opts) => runs.runChild(run, workflowId, input, opts) },
    }),
  });
  const scheduler: Scheduler = new Scheduler({
    db, log: ctx.log, clock: opts.clock ?? systemClock, workflows, runs, accounts,
    allowedInterval: (workspaceId) => core.scheduleRegistry.allowedInterval(workspaceId),
    billingPeriod: () => limits.usage.period(),
  });
  core.scheduleRegistry.onChange(({ workflowId, row }) => scheduler.changed(workflowId, row));
  const webhooks = new WebhookService({
    db, config, log: ctx.log, registry: core.webhookRegistry, workflows, runs, accounts, limits, storage: limits.storage, secrets: core.secrets,
  });
  const retention = new RunRetention(db, {
    days: config.logRetentionDays, batchSize: DEFAULT_RETENTION_BATCH, intervalMs: config.logRetentionIntervalMs,
    // PostgreSQL's autovacuum reclaims on its own; PGlite has none (docs/architecture.md, "Run-log retention").
    reclaim: db.mode === 'pglite' ? vacuumRunTables(db) : undefined,
    alsoSweep: [
      { name: 'audit log', days: config.auditRetentionDays, deleteBatch: (cutoff, n) => deleteAuditBefore(db, cutoff, n) },
      // A revoked key goes with the runs that could name it (WEFT_LOG_RETENTION_DAYS); the audit log keeps its name.
      { name: 'revoked API keys', days: config.logRetentionDays, deleteBatch: (cutoff, n) => accounts.deleteKeysRevokedBefore(cutoff, n) },
      // Files uploaded with webhook deliveries go with the runs that received them (their storage is freed).
      { name: 'webhook files', days: config.logRetentionDays, deleteBatch: (cutoff, n) => deleteWebhookFilesBefore(db, cutoff, n) },
    ],
  }, ctx.log, opts.clock ?? systemClock);
  // In start order; each stops before those above it. Another entry is one more line here.
  lifecycles.add({ name: 'embedders', stop: () => embedders.close() });
  lifecycles.add({ name: 'sandbox', stop: () => sandbox.dispose?.() });
  lifecycles.add({ name: 'run workers and queue', start: runsJobs ? () => runs.startWorkers() : undefined, stop: () => runs.close() });
  lifecycles.add({ name: 'ingest worker pool', stop: () => ingestPool.close() });
  lifecycles.add({ name: 'ingest workers', start: runsJobs ? () => knowledge.startWorkers() : undefined, stop: () => knowledge.close() });
  // Deployed schedules fire from worker processes (each tick once across all of them).
  lifecycles.add({ name: 'scheduler', start: runsJobs ? () => scheduler.start() : undefined, stop: () => scheduler.stop() });
  lifecycles.add({ name: 'run-log retention', start: runsJobs ? () => retention.start() : undefined, stop: () => retention.stop() });
  return { ...core, runs, webhooks, knowledge, observer, scheduler, retention };
}
