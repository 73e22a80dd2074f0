import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { parseCrossOriginPolicy, type CrossOriginPolicy } from './http/cross-origin.js';
import { DEFAULT_QUERY_TIMEOUT_MS } from './limits/query-timeout.js';
import { DEFAULT_HASH_COST, MIN_HASH_COST, MIN_PRODUCTION_HASH_COST } from './sessions/password.js';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

const optionalText = z.string().optional().transform((v) => (v ? v : undefined));

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  WEFT_DATA_DIR: z.string().min(1).default('./.weft'),
  // off: the embedded database's commits are not synced to disk; only for directories one can lose (CI, demos).
  WEFT_EMBEDDED_FSYNC: z.enum(['on', 'off']).default('on'),
  DATABASE_URL: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  REDIS_URL: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WEFT_BASE_URL: z.string().url().optional(),
  WEFT_PUBLIC_BASE_URL: z.string().url().optional(),
  // Who may call execute from a browser page on another origin (src/http/cross-origin.ts).
  WEFT_EXECUTE_CORS_ORIGINS: z.string().default('*').transform((v, ctx): CrossOriginPolicy => {
    const policy = parseCrossOriginPolicy(v);
    if (typeof policy === 'object' && 'error' in policy) {
      ctx.addIssue({ code: 'custom', message: policy.error });
      return z.NEVER;
    }
    return policy;
  }),
  WEFT_ALLOW_PRIVATE_NETWORK: booleanFlag,
  WEFT_DEFAULT_PLAN: z.enum(['free', 'pro', 'team', 'enterprise']).default('free'),
  WEFT_KEY_CACHE_MS: z.coerce.number().int().min(0).max(5000).default(2000),
  // Runs in flight mostly wait (on the database, providers, people); the sandbox pool bounds their CPU. 16 left
  // the embedded queue waiting seconds under load while both cores idled (bench/RESULTS.md, compare).
  WEFT_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(128),
  WEFT_LIMITS: z.enum(['on', 'off']).default('on'),
  WEFT_PLAN_LIMITS: z.string().optional(),
  WEFT_JOB_LEASE_MS: z.coerce.number().int().min(1000).max(600_000).default(30_000),
  WEFT_WEBHOOK_RETENTION_DAYS: z.coerce.number().min(0.0001).max(365).default(7),
  WEFT_LOG_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).default(30),
  WEFT_LOG_RETENTION_INTERVAL_SECONDS: z.coerce.number().min(1).max(86_400).default(600),
  WEFT_AUDIT_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).default(365),
  WEFT_WEBHOOK_LEASE_MS: z.coerce.number().int().min(200).max(600_000).default(30_000),
  WEFT_SANDBOX_POOL_SIZE: z.coerce.number().int().min(1).max(64).default(Math.min(64, availableParallelism())),
  WEFT_SANDBOX_CONTEXTS: z.enum(['fresh', 'workspace']).default('fresh'),
  WEFT_SANDBOX_PURE_CODE: z.enum(['on', 'off']).default('on'),
  // Limits that keep one run or request from hurting the others (docs/architecture.md, Where limits are enforced).
  WEFT_MAX_RUN_STEPS: z.coerce.number().int().min(1).max(100_000_000).default(100_000),
  WEFT_MAX_BLOCK_OUTPUT_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(4 * 1024 * 1024),
  WEFT_MAX_RUN_RESULT_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(4 * 1024 * 1024),
  WEFT_MAX_PAUSE_POINTS: z.coerce.number().int().min(1).max(100_000).default(100),
  WEFT_MAX_TRACE_ENTRIES: z.coerce.number().int().min(10).max(1_000_000).default(2_000),
  WEFT_MAX_TRACE_OUTPUT_BYTES: z.coerce.number().int().min(0).max(1024 * 1024 * 1024).default(4 * 1024 * 1024),
  WEFT_MAX_TRACE_LOG_CHARS: z.coerce.number().int().min(0).max(1024 * 1024 * 1024).default(1024 * 1024),
  WEFT_MAX_BLOCKS_PER_WORKFLOW: z.coerce.number().int().min(1).max(100_000).default(1_000),
  WEFT_MAX_DEFINITION_BYTES: z.coerce.number().int().min(1024).max(10_485_760).default(2_097_152),
  WEFT_MAX_JOB_INTERRUPTIONS: z.coerce.number().int().min(0).max(100).default(3),
  WEFT_TABLE_PAGE_MAX_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(8 * 1024 * 1024),
  WEFT_QUERY_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(DEFAULT_QUERY_TIMEOUT_MS),
  WEFT_SCANS_PER_WORKSPACE: z.coerce.number().int().min(1).max(1_000).default(4),
  WEFT_CONNECTION_TIMEOUT_MS: z.coerce.number().int().min(0).max(24 * 3_600_000).default(3_300_000),
  WEFT_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  WEFT_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(72_000),
  // AI gateway providers (a provider is offered only when its key or base URL is set).
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: z.string().url().default('https://api.openai.com/v1'),
  ANTHROPIC_API_KEY: optionalText,
  ANTHROPIC_BASE_URL: z.string().url().default('https://api.anthropic.com'),
  GEMINI_API_KEY: optionalText,
  GEMINI_BASE_URL: z.string().url().default('https://generativelanguage.googleapis.com'),
  OPENAI_COMPATIBLE_BASE_URL: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  OPENAI_COMPATIBLE_API_KEY: optionalText,
  /** JSON array of extra or overriding catalog entries (see docs/ai-gateway.md). */
  WEFT_AI_MODELS: optionalText,
  WEFT_AI_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(600_000),
  WEFT_AI_DEFAULT_MAX_TOKENS: z.coerce.number().int().min(1).max(1_000_000).default(4096),
  WEFT_AI_MIN_DEPOSIT_USD: z.coerce.number().min(0).max(1000).default(0.0001),
  WEFT_AI_STARTING_CREDITS_USD: z.coerce.number().min(0).max(1_000_000).default(0),
  /** How long a finished AI request's settlement may wait to be written with others (0: before the answer). */
  WEFT_AI_SETTLE_WINDOW_MS: z.coerce.number().int().min(0).max(1000).default(50),
  /** How long a deposit waits for its prompt's token count (counted off the event loop) before it counts bytes. */
  WEFT_AI_TOKEN_COUNT_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(2000),
  // Knowledge bases: a hosted OpenAI-compatible embeddings endpoint replaces the local model when set.
  EMBEDDINGS_BASE_URL: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  EMBEDDINGS_API_KEY: optionalText,
  EMBEDDINGS_MODEL: optionalText,
  EMBEDDINGS_DIMENSION: z.coerce.number().int().min(1).max(16_000).optional(),
  EMBEDDINGS_COST_PER_MILLION_TOKENS: z.coerce.number().min(0).max(1_000_000).default(0),
  WEFT_KNOWLEDGE_MAX_FILE_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(100 * 1024 * 1024),
  // Ingest containment: uploaded documents are parsed in worker threads with their own heap, within these bounds.
  WEFT_KNOWLEDGE_INGEST_WORKERS: z.coerce.number().int().min(1).max(64).default(2),
  WEFT_KNOWLEDGE_WORKER_HEAP_MB: z.coerce.number().int().min(32).max(16_384).default(512),
  WEFT_KNOWLEDGE_MAX_ARCHIVE_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(100 * 1024 * 1024),
  WEFT_KNOWLEDGE_MAX_COMPRESSION_RATIO: z.coerce.number().min(2).max(100_000).default(200),
  WEFT_KNOWLEDGE_MAX_CHARACTERS: z.coerce.number().int().min(1).max(1_000_000_000).default(20_000_000),
  WEFT_KNOWLEDGE_MAX_PDF_PAGES: z.coerce.number().int().min(1).max(1_000_000).default(2_000),
  WEFT_KNOWLEDGE_MAX_ROWS: z.coerce.number().int().min(1).max(100_000_000).default(200_000),
  WEFT_KNOWLEDGE_MAX_CHUNKS: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
  WEFT_KNOWLEDGE_INGEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(24 * 3_600_000).default(1_800_000),
  WEFT_KNOWLEDGE_PARSE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
  WEFT_KNOWLEDGE_MAX_CRASH_RETRIES: z.coerce.number().int().min(0).max(100).default(2),
  // Observability: /metrics wants this token when set; without it, /metrics is served only on a loopback listener.
  // Traces only with an OTLP endpoint.
  WEFT_METRICS_TOKEN: optionalText,
  WEFT_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  OTEL_SERVICE_NAME: z.string().min(1).default('weft'),
  // The dashboard: its build, the first admin's email, sessions, and whether to believe X-Forwarded-*.
  WEFT_WEB_DIST: optionalText,
  WEFT_ADMIN_EMAIL: z.string().trim().min(3).max(254).regex(/^[^\s@]+@[^\s@]+$/, 'must be an email address').default('admin@localhost'),
  WEFT_SESSION_IDLE_HOURS: z.coerce.number().min(0.01).max(24 * 90).default(24),
  WEFT_SESSION_MAX_DAYS: z.coerce.number().min(0.01).max(365).default(14),
  WEFT_TRUST_PROXY: booleanFlag,
  // scrypt cost (log2 N) for new password hashes; below the production floor only when NODE_ENV=test.
  WEFT_PASSWORD_HASH_COST: z.coerce.number().int().min(MIN_HASH_COST).max(20).default(DEFAULT_HASH_COST),
  NODE_ENV: optionalText,
  // Workspace secrets: the AES-256-GCM key (32 bytes, base64). Unset: a key file in the data directory
  // (embedded only; PostgreSQL refuses to start without it). Previous keys still decrypt during a rotation.
  WEFT_ENCRYPTION_KEY: optionalText.refine((v) => v === undefined || Buffer.from(v.trim(), 'base64').length === 32,
    'must be 32 random bytes in base64 (openssl rand -base64 32)'),
  WEFT_ENCRYPTION_KEY_PREVIOUS: optionalText,
});

import type { IngestBounds } from './knowledge/ingest-bounds.js';
import type { PlanName } from './limits/plans.js';

export type Plan = PlanName;

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Sync the embedded database's commits to disk (WEFT_EMBEDDED_FSYNC, docs/architecture.md "Embedded durability"). */
  embeddedFsync: boolean;
  databaseUrl?: string;
  redisUrl?: string;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  baseUrl?: string;
  /** A second origin that serves only webhook trigger URLs (their links use it); the dashboard and API stay on the first. */
  publicBaseUrl?: string;
  /** Origins whose pages may call execute (CORS): `*` any, an empty list none (WEFT_EXECUTE_CORS_ORIGINS). */
  executeCorsOrigins: CrossOriginPolicy;
  allowPrivateNetwork: boolean;
  defaultPlan: Plan;
  /** How long a positive API-key lookup may be reused; revocation must bite within 5 s. */
  keyCacheMs: number;
  workerConcurrency: number;
  /** Rate, usage and concurrency limits; `off` only for benchmarks and trusted single-tenant setups. */
  limitsEnabled: boolean;
  /** Per-plan overrides of the limits, as JSON (see src/limits/plans.ts). */
  planLimitsJson?: string;
  /** How long a worker owns an async job without renewing; a crashed worker's job is taken over after it. */
  jobLeaseMs: number;
  /** How long a webhook delivery key is remembered (duplicates within it start no run). */
  webhookRetentionDays: number;
  /** Days finished runs' logs are kept (0: forever). */
  logRetentionDays: number;
  /** How often the run-log retention sweep runs (ms). */
  logRetentionIntervalMs: number;
  /** Days an audit entry is kept (WEFT_AUDIT_RETENTION_DAYS); 0 keeps every one. */
  auditRetentionDays: number;
  /** Lease of a webhook delivery claim not yet answered; an expired one is taken over by a retry. */
  webhookLeaseMs: number;
  /** Isolates running user code at once (one call each); shared fairly between workspaces. */
  sandboxPoolSize: number;
  /** `fresh`: a new V8 context per run; `workspace`: hardened contexts handed between calls of one workspace. */
  sandboxContexts: 'fresh' | 'workspace';
  /** Evaluate function blocks whose code only computes a value from its inputs without a V8 context. */
  sandboxPureCode: boolean;
  /** Block executions one run may make (loops and children included); over it the run fails naming the limit. */
  maxRunSteps: number;
  /** JSON size of one block's output; over it the block fails. */
  maxBlockOutputBytes: number;
  /** JSON size of a run's stored and returned result. */
  maxRunResultBytes: number;
  /** Pause points (human blocks waiting) one run may hold, resumed ones included; past it the run fails. */
  maxPausePoints: number;
  /** Trace entries kept per run. */
  maxTraceEntries: number;
  /** JSON bytes of block outputs one run's trace keeps (the rest are named by size). */
  maxTraceOutputBytes: number;
  /** Characters of console lines one run's trace keeps. */
  maxTraceLogChars: number;
  /** Blocks in one workflow definition, nested ones included. */
  maxBlocksPerWorkflow: number;
  /** UTF-8 bytes of one workflow definition's JSON text; more is a 413. */
  maxDefinitionBytes: number;
  /** Crashes an async run may be interrupted by before it is failed instead of retried. */
  maxJobInterruptions: number;
  /** Row data one tables page may carry; a page stops early past it. */
  tablePageMaxBytes: number;
  /** On PostgreSQL, a table row query's statements are cancelled past this many ms (0: never). */
  queryTimeoutMs: number;
  /** A workspace's scans (table queries and filtered writes, knowledge searches) running at once in a process. */
  scansPerWorkspace: number;
  /**
   * HTTP server timeouts: a socket silent for `connectionTimeoutMs` is closed (longer than the longest sync
   * run, 3,000 s); a request must arrive whole within `requestTimeoutMs` (slow senders); idle keep-alive.
   */
  connectionTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  ai: AiConfig;
  knowledge: KnowledgeConfig;
  observability: ObservabilityConfig;
  dashboard: DashboardConfig;
  encryption: EncryptionConfig;
}

/** The key of the workspace secrets (src/secrets/). */
export interface EncryptionConfig {
  /** WEFT_ENCRYPTION_KEY (base64 of 32 bytes); unset: the embedded key file. */
  key?: string;
  /** WEFT_ENCRYPTION_KEY_PREVIOUS, comma-separated: keys that still decrypt rows not yet rotated. */
  previousKeys: string[];
}

/** The web dashboard and its sign-in (src/sessions/, src/http/web-app.ts). */
export interface DashboardConfig {
  /** The built app (index.html and assets/); served at / when it exists. */
  webDist: string;
  /** Email of the admin user the first setup creates. */
  adminEmail: string;
  /** scrypt cost (log2 N) for new password hashes. */
  passwordHashCost: number;
  /** A session unused this long ends. */
  sessionIdleMs: number;
  /** A session ends this long after sign-in, used or not. */
  sessionMaxMs: number;
  /** Believe X-Forwarded-For/-Proto (behind a reverse proxy): client address and https for Secure cookies. */
  trustProxy: boolean;
}

/** Metrics and traces (see src/observability/). */
export interface ObservabilityConfig {
  /** Bearer token GET /metrics requires; unset: /metrics is open on a loopback listener and off on any other. */
  metricsToken?: string;
  /** Worker processes (no HTTP API) serve /metrics on this port when set. */
  metricsPort?: number;
  /** OTLP/HTTP traces endpoint (the signal URL, ending in /v1/traces); unset: no tracing. */
  otlpTracesUrl?: string;
  serviceName: string;
}

/** Knowledge bases: the embedder, the upload size limit and what one document's ingest may cost. */
export interface KnowledgeConfig {
  /** A hosted OpenAI-compatible embeddings endpoint; the local model when unset. */
  embeddings: { baseUrl?: string; apiKey?: string; model?: string; dimension?: number; costPerMillionTokensUsd: number };
  maxFileBytes: number;
  /** Documents parsed at once, each in its own worker thread with a `workerHeapMb` heap. */
  ingestWorkers: number;
  workerHeapMb: number;
  /** How long one document may parse in its worker before the worker is terminated and the document fails. */
  parseTimeoutMs: number;
  /** Bounds on one document (src/knowledge/ingest-bounds.ts). */
  bounds: IngestBounds;
  /** Wall time of one ingest. */
  ingestTimeoutMs: number;
  /** Parses that crashed their worker after which a document is failed instead of parsed again. */
  maxCrashRetries: number;
}

/** AI gateway settings: provider credentials and endpoints, billing defaults. */
export interface AiConfig {
  openai: { apiKey?: string; baseUrl: string };
  anthropic: { apiKey?: string; baseUrl: string };
  gemini: { apiKey?: string; baseUrl: string };
  openaiCompatible: { baseUrl?: string; apiKey?: string };
  /** Raw JSON of extra catalog entries (validated by the catalog). */
  extraModels?: string;
  /** Upstream request timeout. */
  timeoutMs: number;
  /** Completion tokens reserved (and sent upstream as the cap) when a request sets no max_tokens. */
  defaultMaxTokens: number;
  /** Smallest deposit reserved per request, USD. */
  minDepositUsd: number;
  /** Balance a billed account starts with the first time it uses the gateway, USD. */
  startingCreditsUsd: number;
  /**
   * Settlements of finished requests are written after the answer, together, within this delay (0: each
   * before its answer). A crash loses at most this window's settlements: docs/architecture.md, Credit ledgers.
   */
  settleWindowMs: number;
  /**
   * A prompt's tokens are counted on a thread of their own; a deposit waits this long for the count, then
   * counts the prompt's UTF-8 bytes instead (an upper bound): docs/architecture.md, Credit ledgers.
   */
  tokenCountTimeoutMs: number;
}

/** The one place environment variables are read. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  if (e.WEFT_PASSWORD_HASH_COST < MIN_PRODUCTION_HASH_COST && e.NODE_ENV !== 'test') {
    throw new Error(`Invalid configuration: WEFT_PASSWORD_HASH_COST: below ${MIN_PRODUCTION_HASH_COST} only in tests (NODE_ENV=test)`);
  }
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: path.resolve(e.WEFT_DATA_DIR),
    embeddedFsync: e.WEFT_EMBEDDED_FSYNC === 'on',
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    logLevel: e.LOG_LEVEL,
    baseUrl: e.WEFT_BASE_URL?.replace(/\/$/, ''),
    publicBaseUrl: e.WEFT_PUBLIC_BASE_URL?.replace(/\/$/, ''),
    executeCorsOrigins: e.WEFT_EXECUTE_CORS_ORIGINS,
    allowPrivateNetwork: e.WEFT_ALLOW_PRIVATE_NETWORK,
    defaultPlan: e.WEFT_DEFAULT_PLAN,
    keyCacheMs: e.WEFT_KEY_CACHE_MS,
    workerConcurrency: e.WEFT_WORKER_CONCURRENCY,
    limitsEnabled: e.WEFT_LIMITS === 'on',
    planLimitsJson: e.WEFT_PLAN_LIMITS,
    jobLeaseMs: e.WEFT_JOB_LEASE_MS,
    webhookRetentionDays: e.WEFT_WEBHOOK_RETENTION_DAYS,
    logRetentionDays: e.WEFT_LOG_RETENTION_DAYS,
    logRetentionIntervalMs: Math.round(e.WEFT_LOG_RETENTION_INTERVAL_SECONDS * 1000),
    auditRetentionDays: e.WEFT_AUDIT_RETENTION_DAYS,
    webhookLeaseMs: e.WEFT_WEBHOOK_LEASE_MS,
    sandboxPoolSize: e.WEFT_SANDBOX_POOL_SIZE,
    sandboxContexts: e.WEFT_SANDBOX_CONTEXTS,
    sandboxPureCode: e.WEFT_SANDBOX_PURE_CODE === 'on',
    maxRunSteps: e.WEFT_MAX_RUN_STEPS,
    maxBlockOutputBytes: e.WEFT_MAX_BLOCK_OUTPUT_BYTES,
    maxRunResultBytes: e.WEFT_MAX_RUN_RESULT_BYTES,
    maxPausePoints: e.WEFT_MAX_PAUSE_POINTS,
    maxTraceEntries: e.WEFT_MAX_TRACE_ENTRIES,
    maxTraceOutputBytes: e.WEFT_MAX_TRACE_OUTPUT_BYTES,
    maxTraceLogChars: e.WEFT_MAX_TRACE_LOG_CHARS,
    maxBlocksPerWorkflow: e.WEFT_MAX_BLOCKS_PER_WORKFLOW,
    maxDefinitionBytes: e.WEFT_MAX_DEFINITION_BYTES,
    maxJobInterruptions: e.WEFT_MAX_JOB_INTERRUPTIONS,
    tablePageMaxBytes: e.WEFT_TABLE_PAGE_MAX_BYTES,
    queryTimeoutMs: e.WEFT_QUERY_TIMEOUT_MS,
    scansPerWorkspace: e.WEFT_SCANS_PER_WORKSPACE,
    connectionTimeoutMs: e.WEFT_CONNECTION_TIMEOUT_MS,
    requestTimeoutMs: e.WEFT_REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: e.WEFT_KEEP_ALIVE_TIMEOUT_MS,
    ai: {
      openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL.replace(/\/+$/, '') },
      anthropic: { apiKey: e.ANTHROPIC_API_KEY, baseUrl: e.ANTHROPIC_BASE_URL.replace(/\/+$/, '') },
      gemini: { apiKey: e.GEMINI_API_KEY, baseUrl: e.GEMINI_BASE_URL.replace(/\/+$/, '') },
      openaiCompatible: { baseUrl: e.OPENAI_COMPATIBLE_BASE_URL?.replace(/\/+$/, ''), apiKey: e.OPENAI_COMPATIBLE_API_KEY },
      extraModels: e.WEFT_AI_MODELS,
      timeoutMs: e.WEFT_AI_TIMEOUT_MS,
      defaultMaxTokens: e.WEFT_AI_DEFAULT_MAX_TOKENS,
      minDepositUsd: e.WEFT_AI_MIN_DEPOSIT_USD,
      startingCreditsUsd: e.WEFT_AI_STARTING_CREDITS_USD,
      settleWindowMs: e.WEFT_AI_SETTLE_WINDOW_MS,
      tokenCountTimeoutMs: e.WEFT_AI_TOKEN_COUNT_TIMEOUT_MS,
    },
    knowledge: {
      embeddings: {
        baseUrl: e.EMBEDDINGS_BASE_URL?.replace(/\/+$/, ''), apiKey: e.EMBEDDINGS_API_KEY, model: e.EMBEDDINGS_MODEL,
        dimension: e.EMBEDDINGS_DIMENSION, costPerMillionTokensUsd: e.EMBEDDINGS_COST_PER_MILLION_TOKENS,
      },
      maxFileBytes: e.WEFT_KNOWLEDGE_MAX_FILE_BYTES,
      ingestWorkers: e.WEFT_KNOWLEDGE_INGEST_WORKERS,
      workerHeapMb: e.WEFT_KNOWLEDGE_WORKER_HEAP_MB,
      parseTimeoutMs: e.WEFT_KNOWLEDGE_PARSE_TIMEOUT_MS,
      bounds: {
        maxArchiveBytes: e.WEFT_KNOWLEDGE_MAX_ARCHIVE_BYTES,
        maxCompressionRatio: e.WEFT_KNOWLEDGE_MAX_COMPRESSION_RATIO,
        maxCharacters: e.WEFT_KNOWLEDGE_MAX_CHARACTERS,
        maxPdfPages: e.WEFT_KNOWLEDGE_MAX_PDF_PAGES,
        maxRows: e.WEFT_KNOWLEDGE_MAX_ROWS,
        maxChunks: e.WEFT_KNOWLEDGE_MAX_CHUNKS,
      },
      ingestTimeoutMs: e.WEFT_KNOWLEDGE_INGEST_TIMEOUT_MS,
      maxCrashRetries: e.WEFT_KNOWLEDGE_MAX_CRASH_RETRIES,
    },
    observability: {
      metricsToken: e.WEFT_METRICS_TOKEN,
      metricsPort: e.WEFT_METRICS_PORT,
      // The signal-specific variable is the URL as is; the generic one is a base that /v1/traces is appended to.
      otlpTracesUrl: e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
        ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT ? `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined),
      serviceName: e.OTEL_SERVICE_NAME,
    },
    dashboard: {
      webDist: e.WEFT_WEB_DIST ? path.resolve(e.WEFT_WEB_DIST) : fileURLToPath(new URL('../web/dist/', import.meta.url)),
      adminEmail: e.WEFT_ADMIN_EMAIL,
      passwordHashCost: e.WEFT_PASSWORD_HASH_COST,
      sessionIdleMs: Math.round(e.WEFT_SESSION_IDLE_HOURS * 3_600_000),
      sessionMaxMs: Math.round(e.WEFT_SESSION_MAX_DAYS * 86_400_000),
      trustProxy: e.WEFT_TRUST_PROXY,
    },
    encryption: {
      key: e.WEFT_ENCRYPTION_KEY?.trim(),
      previousKeys: (e.WEFT_ENCRYPTION_KEY_PREVIOUS ?? '').split(',').map((k) => k.trim()).filter(Boolean),
    },
    ...overrides,
  };
}
