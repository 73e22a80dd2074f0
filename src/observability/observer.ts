// What the areas tell observability, and the one implementation: metrics, the run log line, traces.
// Each area takes the narrow interface it needs through its constructor (RunObserver, AiObserver,
// LimitObserver); the composition root hands every one the same Observability of the process.
import type { Logger } from 'pino';
import { BASE_RUN_CHARGE_USD } from '../limits/plans.js';
import type { BlockTrace } from '../engine/index.js';
import type { RunEvent } from './events.js';
import { Metrics, type ScrapeSources } from './metrics.js';
import type { Tracing } from './tracing.js';

export interface RunObserver {
  /** An async run leaves the queue for the first time, `waitMs` after it was enqueued. */
  runStarted(e: { trigger: string; waitMs: number }): void;
  runFinished(e: RunEvent): void;
}

export interface AiObserver {
  /** A settled gateway call (the HTTP API or a workflow block). */
  aiUsage(e: { model: string; promptTokens: number; completionTokens: number; costUsd: number }): void;
}

/** rate: an execution or trigger bucket; api: an API bucket; concurrency: no slot; usage: the period cost cap. */
export type LimitKind = 'rate' | 'api' | 'concurrency' | 'usage';

export interface LimitObserver {
  limitRejected(e: { kind: LimitKind }): void;
}

export type Observer = RunObserver & AiObserver & LimitObserver;

/** Base charge plus what the run's AI blocks report as their cost (agent, router, evaluator outputs). */
export function runCostUsd(trace: readonly BlockTrace[]): number {
  let cost = BASE_RUN_CHARGE_USD;
  for (const b of trace) {
    if (b.status === 'replayed') continue;
    const out = b.output as { cost?: unknown } | null | undefined;
    if (out && typeof out === 'object' && typeof out.cost === 'number' && Number.isFinite(out.cost)) cost += out.cost;
  }
  return Math.round(cost * 1e9) / 1e9;
}

export class Observability implements Observer {
  readonly metrics: Metrics;

  constructor(private readonly log: Logger, sources: ScrapeSources, readonly tracing?: Tracing) {
    this.metrics = new Metrics(sources);
  }

  runStarted(e: { trigger: string; waitMs: number }): void {
    this.metrics.queueWait.observe({ trigger: e.trigger }, Math.max(0, e.waitMs) / 1000);
  }

  /** Never throws into the run's path: a failure here is logged and the run goes on. */
  runFinished(e: RunEvent): void {
    try {
      this.recordRun(e);
    } catch (err) {
      this.log.warn({ err, executionId: e.executionId }, 'recording run metrics failed');
    }
  }

  private recordRun(e: RunEvent): void {
    const labels = { trigger: e.trigger, mode: e.mode, status: e.status };
    this.metrics.runs.inc(labels);
    this.metrics.runDuration.observe(labels, e.durationMs / 1000);
    for (const b of e.trace) {
      if (b.status !== 'replayed') this.metrics.blockDuration.observe({ type: b.type, status: b.status }, b.durationMs / 1000);
    }
    this.log.info({
      workflowId: e.workflowId, executionId: e.executionId, workspaceId: e.workspaceId, trigger: e.trigger, mode: e.mode,
      status: e.status, durationMs: e.durationMs, costUsd: runCostUsd(e.trace), blocks: e.trace.length,
      ...(e.error ? { error: e.error } : {}),
    }, 'run finished');
    this.tracing?.run(e);
  }

  aiUsage(e: { model: string; promptTokens: number; completionTokens: number; costUsd: number }): void {
    this.metrics.aiTokens.inc({ model: e.model, kind: 'prompt' }, e.promptTokens);
    this.metrics.aiTokens.inc({ model: e.model, kind: 'completion' }, e.completionTokens);
    this.metrics.aiCost.inc({ model: e.model }, e.costUsd);
  }

  limitRejected(e: { kind: LimitKind }): void {
    this.metrics.limitRejections.inc({ kind: e.kind });
  }

  /** Flushes buffered spans. */
  async close(): Promise<void> {
    await this.tracing?.close();
  }
}
