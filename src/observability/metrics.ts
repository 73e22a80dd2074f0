// The Prometheus metrics of one process: a registry of its own (never prom-client's global one), the
// instruments the areas feed through the Observer, and gauges read at scrape time.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds. HTTP and blocks: from sub-millisecond answers to minute-long agent calls. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds. Runs and queue waits last longer: up to the async timeout. */
const RUN_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/** Connections of the database pool, read at scrape time (PGlite: its one connection). */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

/** What the gauges read when scraped. */
export interface ScrapeSources {
  /** Async runs waiting for a worker (the durable `executions` rows, not the broker's view). */
  queueDepth?: () => Promise<number>;
  poolStats?: () => PoolStats | undefined;
  /** The embedded database's thread: busy seconds and statements so far (both only grow). */
  databaseActivity?: () => Promise<{ busySeconds: number; statements: number; fileSyncs: number }>;
  /** The sandbox's V8 contexts so far: created, and handed from one run to another (both only grow). */
  sandboxContexts?: () => { created: number; reused: number; pure: number };
  /** The sandbox process's stops while code ran, those charged to one workspace, and calls refused meanwhile. */
  sandboxCrashes?: () => { stops: number; charged: number; refused: number };
  /** The workflow service's caches (rows, versions, compiled graphs): entries and the bytes counted for them. */
  workflowCaches?: () => Record<string, { entries: number; bytes: number }>;
}

export class Metrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly runs: Counter<'trigger' | 'mode' | 'status'>;
  readonly runDuration: Histogram<'trigger' | 'mode' | 'status'>;
  readonly blockDuration: Histogram<'type' | 'status'>;
  readonly queueWait: Histogram<'trigger'>;
  readonly aiTokens: Counter<'model' | 'kind'>;
  readonly aiCost: Counter<'model'>;
  readonly limitRejections: Counter<'kind'>;

  constructor(sources: ScrapeSources = {}) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpDuration = new Histogram({
      name: 'weft_http_request_duration_seconds',
      help: 'HTTP requests by method, route pattern and status code: latency (its _count is the request count)',
      labelNames: ['method', 'route', 'status'], buckets: LATENCY_BUCKETS, registers,
    });
    this.runs = new Counter({
      name: 'weft_runs_total', help: 'Finished workflow runs by trigger, mode (sync or async) and final status',
      labelNames: ['trigger', 'mode', 'status'], registers,
    });
    this.runDuration = new Histogram({
      name: 'weft_run_duration_seconds', help: 'Duration of finished workflow runs (engine time, queue wait excluded)',
      labelNames: ['trigger', 'mode', 'status'], buckets: RUN_BUCKETS, registers,
    });
    this.blockDuration = new Histogram({
      name: 'weft_block_duration_seconds', help: 'Duration of executed blocks by block type and status (replayed blocks are not counted)',
      labelNames: ['type', 'status'], buckets: LATENCY_BUCKETS, registers,
    });
    this.queueWait = new Histogram({
      name: 'weft_queue_wait_seconds', help: 'Time async runs waited between enqueue and their first start',
      labelNames: ['trigger'], buckets: RUN_BUCKETS, registers,
    });
    this.aiTokens = new Counter({
      name: 'weft_ai_tokens_total', help: 'AI gateway tokens billed, by model and kind (prompt or completion); gateway API and workflow blocks',
      labelNames: ['model', 'kind'], registers,
    });
    this.aiCost = new Counter({
      name: 'weft_ai_cost_usd_total', help: 'AI gateway cost charged to accounts, USD, by model',
      labelNames: ['model'], registers,
    });
    this.limitRejections = new Counter({
      name: 'weft_limit_rejections_total',
      help: 'Requests refused by plan limits, by kind: rate (execution buckets), api (API buckets), concurrency, usage (period cost cap)',
      labelNames: ['kind'], registers,
    });
    const { queueDepth, poolStats, databaseActivity, sandboxContexts, sandboxCrashes, workflowCaches } = sources;
    if (queueDepth) {
      new Gauge({
        name: 'weft_queue_depth', help: 'Async runs queued and not yet started (read from the database at scrape time)', registers,
        // The database away: no sample this scrape (the rest of the scrape still answers).
        async collect() {
          try {
            this.set(await queueDepth());
          } catch {
            this.reset();
          }
        },
      });
    }
    if (poolStats) {
      new Gauge({
        name: 'weft_db_pool_connections',
        help: 'Database connections by state: total and idle (PostgreSQL pool; PGlite has one connection, busy while a statement or transaction runs)',
        labelNames: ['state'], registers,
        collect() {
          const s = poolStats();
          if (!s) return;
          this.set({ state: 'total' }, s.total);
          this.set({ state: 'idle' }, s.idle);
        },
      });
      new Gauge({
        name: 'weft_db_pool_waiting', help: 'Database calls waiting for a connection (PGlite: statements and transactions queued behind the running one)', registers,
        collect() {
          const s = poolStats();
          if (s) this.set(s.waiting);
        },
      });
    }
    if (databaseActivity) registerDatabaseActivity(databaseActivity, registers);
    if (sandboxContexts) {
      totalCounter(registers, 'weft_sandbox_contexts_created_total',
        'V8 contexts created for function blocks (one per run with WEFT_SANDBOX_CONTEXTS=fresh)',
        () => sandboxContexts().created);
      totalCounter(registers, 'weft_sandbox_contexts_reused_total',
        'Function block calls served by a context an earlier call of the workspace used (WEFT_SANDBOX_CONTEXTS=workspace)',
        () => sandboxContexts().reused);
      totalCounter(registers, 'weft_sandbox_pure_calls_total',
        'Function block calls whose code only computes a value from its inputs, evaluated without a V8 context (WEFT_SANDBOX_PURE_CODE)',
        () => sandboxContexts().pure);
    }
    if (sandboxCrashes) {
      totalCounter(registers, 'weft_sandbox_process_stops_total',
        'Times the sandbox process stopped while code ran in it (code used more memory than an isolate can contain)',
        () => sandboxCrashes().stops);
      totalCounter(registers, 'weft_sandbox_charged_stops_total',
        'Stops of the sandbox process charged to one workspace (its calls alone were running)',
        () => sandboxCrashes().charged);
      totalCounter(registers, 'weft_sandbox_refused_calls_total',
        'Function block calls refused because their workspace stopped the sandbox process too often',
        () => sandboxCrashes().refused);
    }
    if (workflowCaches) {
      new Gauge({
        name: 'weft_workflow_cache_entries', help: 'Entries in the workflow service\'s caches (each bounded by entries and bytes)',
        labelNames: ['cache'], registers,
        collect() {
          for (const [cache, size] of Object.entries(workflowCaches())) this.set({ cache }, size.entries);
        },
      });
      new Gauge({
        name: 'weft_workflow_cache_bytes', help: 'Bytes counted for the entries of the workflow service\'s caches (JSON size of what each holds)',
        labelNames: ['cache'], registers,
        collect() {
          for (const [cache, size] of Object.entries(workflowCaches())) this.set({ cache }, size.bytes);
        },
      });
    }
  }
}

/**
 * A counter over a running total kept elsewhere, read at scrape time: each scrape adds what the total grew by
 * since the one before. A read that fails or gives undefined adds nothing this scrape.
 */
function totalCounter(registers: Registry[], name: string, help: string, read: () => number | undefined | Promise<number | undefined>): void {
  let counted = 0;
  new Counter({
    name, help, registers,
    async collect() {
      const now = await Promise.resolve().then(read).catch(() => undefined);
      if (now === undefined || now <= counted) return;
      this.inc(now - counted);
      counted = now;
    },
  });
}

function registerDatabaseActivity(read: NonNullable<ScrapeSources['databaseActivity']>, registers: Registry[]): void {
  totalCounter(registers, 'weft_db_busy_seconds_total',
    'Seconds the embedded database thread was busy (statements, transactions, VACUUM); rising at about 1 per second, it is saturated',
    async () => (await read()).busySeconds);
  totalCounter(registers, 'weft_db_statements_total', 'Statements the embedded database thread ran for the server', async () => (await read()).statements);
  totalCounter(registers, 'weft_db_file_syncs_total',
    'Files the embedded database synced to disk (each commit\'s write-ahead log, checkpoints); 0 in memory', async () => (await read()).fileSyncs);
}
