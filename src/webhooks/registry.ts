// The path registry: which deployed workflow answers at which trigger path. Kept in step with deploys
// (the workflow service calls `deploymentChanged` inside its deploy, undeploy and rollback transactions).
import { randomBytes } from 'node:crypto';
import type { Database, Queryable } from '../db/database.js';
import { uniqueViolation } from '../db/database.js';
import { webhookConfigSchema, type WebhookConfig, type WorkflowDefinition } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import * as store from './store.js';
import type { WebhookRow } from './store.js';

export const TRIGGER_PREFIX = '/api/webhooks/trigger/';

/** The webhook block of a definition (top level; at most one) with its parsed config. */
export function webhookBlockOf(definition: WorkflowDefinition): { id: string; config: WebhookConfig } | undefined {
  const block = definition.blocks.find((b) => b.type === 'webhook');
  if (!block) return undefined;
  const parsed = webhookConfigSchema.safeParse(block.config ?? {});
  return parsed.success ? { id: block.id, config: parsed.data } : undefined;
}

export class WebhookRegistry {
  /** `baseUrl`: WEFT_BASE_URL, the public base of trigger URLs when set (else each request's own). */
  constructor(private readonly db: Database, private readonly baseUrl?: string) {}

  /**
   * A version became active (or none is): the workflow's trigger path follows it. A configured path is
   * used as written; otherwise the one generated for this workflow and block the first time is kept, so
   * redeploying never changes the URL. A path another workflow holds refuses the deploy (409; see `store.pathHolder`).
   */
  async deploymentChanged(q: Queryable, change: { workspaceId: string; workflowId: string; version: { id: string; definition: WorkflowDefinition } | null }): Promise<void> {
    this.recent.clear();
    const block = change.version ? webhookBlockOf(change.version.definition) : undefined;
    if (!change.version || !block) {
      await store.deactivate(q, change.workflowId);
      return;
    }
    const existing = await store.findWebhook(q, change.workflowId, true);
    const generated = existing && existing.block_id === block.id ? existing.generated_path : `wh_${randomBytes(16).toString('hex')}`;
    const path = block.config.path ?? generated;
    const conflict = () => new HttpError(409, `Webhook path "${path}" is already used by another workflow`, { code: 'WEBHOOK_PATH_CONFLICT' });
    if (await store.pathHolder(q, path, change.workflowId, change.workspaceId)) throw conflict();
    try {
      await store.saveWebhook(q, {
        workflow_id: change.workflowId, workspace_id: change.workspaceId, block_id: block.id, path, generated_path: generated, version_id: change.version.id,
      });
    } catch (err) {
      if (uniqueViolation(err)) throw conflict();
      throw err;
    }
  }

  /**
   * Lookups by path, kept for a second (the hot path of every delivery): a deploy in this process clears
   * them, one in another process is seen within a second (the workflow's active version is checked too).
   */
  private readonly recent = new Map<string, { row: WebhookRow | undefined; until: number }>();

  /** The deployed trigger at a path. */
  async byPath(path: string): Promise<WebhookRow | undefined> {
    const hit = this.recent.get(path);
    if (hit && hit.until > Date.now()) return hit.row;
    const row = await store.findDeployedByPath(this.db, path);
    if (this.recent.size > 10_000) this.recent.clear();
    this.recent.set(path, { row, until: Date.now() + 1000 });
    return row;
  }

  /** Trigger paths of the deployed ones among some workflows. */
  async paths(workflowIds: readonly string[]): Promise<Map<string, string>> {
    const rows = await store.deployedFor(this.db, workflowIds);
    return new Map(rows.map((r) => [r.workflow_id, r.path]));
  }

  /** Full trigger URLs of the deployed ones among some workflows, on the public base. */
  async urls(workflowIds: readonly string[], requestBase: string): Promise<Map<string, string>> {
    const base = this.baseUrl ?? requestBase;
    const paths = await this.paths(workflowIds);
    return new Map([...paths].map(([id, p]) => [id, `${base}${TRIGGER_PREFIX}${p}`]));
  }
}
