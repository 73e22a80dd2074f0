import type { Queryable } from '../db/database.js';

// The usage cap on the knowledge API's billable requests (sim-api 10.3 and 10.4 of the reference): a document
// upload, and a search with a query (its embedding is billed), answer 402 once the billed account's cost in the
// billing period has reached its plan's limit (the `isExceeded` of GET /api/users/me/usage-limits). Tag-only
// searches embed nothing and are never refused. The check and its refusal are the limits area's
// (LimitsService.refuseOverUsage), wired in the composition root.

/** Refuses (402) a request of an account over its plan's usage limit; a no-op when limits are off. */
export type UsageCheck = (q: Queryable, billedAccount: string, plan: string) => Promise<void>;

/** Who pays for a request of the knowledge API, and on which plan. */
export interface BilledScope {
  workspaceId: string;
  billedAccount: string;
  /**
   * The billed account's plan, for the usage cap. Absent for a workflow's knowledge block: its run passed the
   * cap at admission (the same 402 as execute), so its searches are not refused half-way through the run.
   */
  plan?: string;
}

export class KnowledgeUsageGate {
  constructor(private readonly refuse: UsageCheck | undefined) {}

  /** 402 when the scope's account has used its period's limit; nothing when no plan is given. */
  async check(q: Queryable, scope: BilledScope): Promise<void> {
    if (this.refuse && scope.plan !== undefined) await this.refuse(q, scope.billedAccount, scope.plan);
  }
}
