// The schedule registry: which deployed workflow fires on which schedule. Kept in step with deploys (the
// workflow service calls `deploymentChanged` inside its deploy, undeploy and rollback transactions), and
// read by the workflows' API data (next run times, enabled, why disabled).
import type { Database, Queryable } from '../db/database.js';
import { scheduleConfigSchema, type ScheduleConfig, type WorkflowDefinition } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { systemClock, type SchedulerClock } from './clock.js';
import * as store from './store.js';
import type { ScheduleRow } from './store.js';
import { nextTicks, parseCron, shortestGapSeconds, tickerFor } from './timing.js';

/** The schedule block of a definition (top level; at most one) with its parsed config. */
export function scheduleBlockOf(definition: WorkflowDefinition): { id: string; config: ScheduleConfig } | undefined {
  const block = definition.blocks.find((b) => b.type === 'schedule');
  if (!block) return undefined;
  const parsed = scheduleConfigSchema.safeParse(block.config ?? {});
  return parsed.success ? { id: block.id, config: parsed.data } : undefined;
}

/** What the engine cannot check itself: the cron expression parses (croner) and has a next tick. */
export function checkScheduleConfig(blockType: string, config: unknown): { field: string; message: string }[] {
  if (blockType !== 'schedule') return [];
  const cfg = config as ScheduleConfig;
  if (cfg.cron === undefined) return [];
  try {
    const cron = parseCron(cfg.cron, cfg.timezone ?? 'UTC');
    if (cron.nextRun(new Date()) === null) return [{ field: 'cron', message: `"${cfg.cron}" never fires` }];
    return [];
  } catch (err) {
    return [{ field: 'cron', message: `invalid cron expression "${cfg.cron}": ${(err as Error).message.replace(/^CronPattern: /, '')}` }];
  }
}

/** A workflow's schedule as its API data shows it. */
export interface ScheduleInfo {
  /** The next few tick times (ISO 8601); empty while disabled. */
  nextRunAt: string[];
  enabled: boolean;
  disabledReason: string | null;
  consecutiveFailures: number;
}

/** How many upcoming ticks the API shows. */
const SHOWN_TICKS = 5;

/** The plan of a workspace and the shortest time it allows between two ticks of a schedule (seconds). */
export type MinScheduleInterval = (workspaceId: string, q?: Queryable) => Promise<{ plan: string; seconds: number }>;

/** Why a schedule config fires too often for a plan (a problem to report), or undefined when it is allowed. */
export function intervalProblem(config: ScheduleConfig, allowed: { plan: string; seconds: number }, nowMs: number): { field: string; message: string } | undefined {
  const gap = shortestGapSeconds(config, nowMs);
  if (gap >= allowed.seconds) return undefined;
  return {
    field: config.intervalSeconds !== undefined ? 'intervalSeconds' : 'cron',
    message: `fires every ${gap} s; the ${allowed.plan} plan allows a schedule to fire at most once every ${allowed.seconds} s`,
  };
}

/** Told of every change this process makes (inside its transaction): the local scheduler re-arms at once. */
export type ScheduleChangeListener = (change: { workflowId: string; row: ScheduleRow | null }) => void;

export class ScheduleRegistry {
  private listener: ScheduleChangeListener = () => undefined;

  constructor(
    private readonly db: Database,
    private readonly clock: SchedulerClock = systemClock,
    /** The plan's minimum interval (none unless given: every schedule is allowed). */
    private readonly minInterval: MinScheduleInterval = async () => ({ plan: 'any', seconds: 0 }),
  ) {}

  /** The workspace's plan and the shortest interval between ticks it allows (the scheduler checks each tick). */
  allowedInterval(workspaceId: string): Promise<{ plan: string; seconds: number }> {
    return this.minInterval(workspaceId);
  }

  /**
   * A definition whose schedule fires more often than the workspace's plan allows is refused (400 naming the
   * block and the minimum): when it is saved and when it is deployed (or rolled back to).
   */
  async checkPlanInterval(workspaceId: string, definition: WorkflowDefinition, q: Queryable = this.db): Promise<void> {
    const block = scheduleBlockOf(definition);
    if (!block) return;
    const problem = intervalProblem(block.config, await this.minInterval(workspaceId, q), this.clock.now());
    if (!problem) return;
    const index = definition.blocks.findIndex((b) => b.id === block.id);
    const message = `Schedule block "${block.id}" ${problem.message}`;
    throw new HttpError(400, `Invalid workflow definition: ${message}`, {
      details: [{ path: ['definition', 'blocks', index, 'config', problem.field], message, blockId: block.id, field: `config.${problem.field}` }],
    });
  }

  /** The composition root hands this process's scheduler in here (there is none in the CLI). */
  onChange(listener: ScheduleChangeListener): void {
    this.listener = listener;
  }

  /**
   * A version became active (or none is): the workflow's schedule follows it. Deploying (again) starts
   * the schedule from now, enabled, with no failures counted; undeploying stops it at once in every
   * process (a tick is claimed only while its version is still deployed).
   */
  async deploymentChanged(q: Queryable, change: { workspaceId: string; workflowId: string; version: { id: string; definition: WorkflowDefinition } | null }): Promise<void> {
    const block = change.version ? scheduleBlockOf(change.version.definition) : undefined;
    if (!change.version || !block) {
      await store.deactivate(q, change.workflowId);
      this.listener({ workflowId: change.workflowId, row: null });
      return;
    }
    const problems = checkScheduleConfig('schedule', block.config);
    if (problems.length > 0) throw new HttpError(400, `Invalid schedule: ${problems[0].message}`, { details: problems });
    await this.checkPlanInterval(change.workspaceId, change.version.definition, q);
    const row = await store.saveDeployed(q, {
      workflowId: change.workflowId, workspaceId: change.workspaceId, versionId: change.version.id, blockId: block.id,
      config: block.config, now: new Date(this.clock.now()),
    });
    this.listener({ workflowId: change.workflowId, row });
  }

  /** The schedules of the deployed ones among some workflows. */
  async info(workflowIds: readonly string[]): Promise<Map<string, ScheduleInfo>> {
    if (workflowIds.length === 0) return new Map();
    const rows = await store.deployedFor(this.db, workflowIds);
    const now = this.clock.now();
    return new Map(rows.map((r) => [r.workflow_id, {
      nextRunAt: r.enabled ? nextTicks(tickerFor(r.config), Math.max(now, r.cursor_at.getTime()), SHOWN_TICKS).map((t) => new Date(t).toISOString()) : [],
      enabled: r.enabled,
      disabledReason: r.disabled_reason,
      consecutiveFailures: r.consecutive_failures,
    }]));
  }
}
