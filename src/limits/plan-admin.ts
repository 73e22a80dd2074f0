import type { AccountsService, Actor } from '../accounts/service.js';
import { HttpError } from '../http/errors.js';
import { PLAN_NAMES } from './plans.js';

/** Reacts to a workspace's new plan (tables' row caps, ...); handed in by the composition root. */
export type PlanChangeListener = (workspaceId: string, plan: string) => Promise<void>;

/** Changing a workspace's plan: instance administrators only (the CLI, or an administrator's personal key). */
export class PlanAdministration {
  constructor(
    private readonly accounts: AccountsService,
    private readonly listeners: readonly PlanChangeListener[],
  ) {}

  /** `caller` is undefined for the CLI, which runs with the instance's own authority. */
  async setPlan(workspaceId: string, plan: string, caller?: { keyType: 'personal' | 'workspace'; userId: string; keyId: string; via?: 'session' }): Promise<void> {
    if (!(PLAN_NAMES as readonly string[]).includes(plan)) throw new HttpError(400, `Unknown plan "${plan}"; use one of ${PLAN_NAMES.join(', ')}`);
    let actor: Actor = { type: 'cli' };
    if (caller) {
      if (caller.keyType !== 'personal') throw new HttpError(403, 'Workspace API keys cannot change plans; use a personal key of an instance administrator');
      if (!(await this.accounts.isInstanceAdmin(caller.userId))) throw new HttpError(403, 'Only instance administrators can change plans');
      actor = { userId: caller.userId, keyId: caller.keyId, type: caller.via === 'session' ? 'session' : 'personal_key' };
    }
    const ws = await this.accounts.setWorkspacePlan(workspaceId, plan, actor);
    if (!ws) throw new HttpError(404, 'Workspace not found');
    for (const listener of this.listeners) await listener(workspaceId, plan);
  }
}
