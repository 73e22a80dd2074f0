// Shapes of the usage-limits, credits and ledger APIs, and the cost-per-day series the chart draws.
import { apiFetch } from '../../api/client';

export interface Bucket {
  limit: number; remaining: number; reset: string; requestsPerMinute: number; maxBurst: number; resetAt: string; isLimited: boolean;
}
export interface UsageLimits {
  success: true;
  rateLimit: { sync: Bucket; async: Bucket; authType: string };
  usage: { currentPeriodCost: number; limit: number; plan: string; isExceeded: boolean };
  storage: { usedBytes: number; limitBytes: number; percentUsed: number };
}
export interface Credits { account: string; balanceUsd: number; reservedUsd: number; updatedAt: string | null }
export interface LedgerEntry {
  id: string; kind: string; amountUsd: number; balanceAfterUsd: number; costUsd: number | null;
  requestId: string | null; model: string | null; note: string | null; createdAt: string;
}
export interface LedgerPage { data: LedgerEntry[]; nextCursor?: string }

/**
 * Which billed account a page shows: the caller's own (no workspace), or a workspace's own account
 * (`workspace:<id>`), which its admins may read by passing the workspace.
 */
export interface AccountView { workspaceId?: string }

const viewQuery = (view: AccountView): Record<string, string> => (view.workspaceId ? { workspaceId: view.workspaceId } : {});

export const usageLimits = (view: AccountView = {}) => apiFetch<UsageLimits>('/api/users/me/usage-limits', { query: viewQuery(view) });
export const credits = (view: AccountView = {}) => apiFetch<Credits>('/api/v1/ai/credits', { query: viewQuery(view) });

export function ledger(view: AccountView, cursor: string | undefined, limit = 20): Promise<LedgerPage> {
  return apiFetch<LedgerPage>('/api/v1/ai/credits/ledger', { query: { ...viewQuery(view), limit: String(limit), ...(cursor ? { cursor } : {}) } });
}

export interface DayCost { date: string; costUsd: number; runs: number }
export interface DailyUsage { account: string; data: DayCost[] }

/**
 * Cost and charged runs per UTC day over the last `days` days, oldest first (every day present): run
 * base charges and model usage, from GET /api/v1/usage/daily. `workspaceId` is the workspace the
 * caller's account is looked up in; with `workspaceAccount` the workspace's own account is read instead.
 */
export function dailyUsage(workspaceId: string, days: number, workspaceAccount: boolean): Promise<DailyUsage> {
  return apiFetch<DailyUsage>('/api/v1/usage/daily', {
    query: { workspaceId, days: String(days), ...(workspaceAccount ? { account: 'workspace' } : {}) },
  });
}
