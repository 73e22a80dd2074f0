// The usage-limits, credits and ledger APIs, and the cost-per-day series the chart draws; shapes from the generated schema.
import { api } from '../../api/client';
import type { Success } from '../../api/schema';

export type UsageLimits = Success<'/api/users/me/usage-limits'>;
export type Bucket = UsageLimits['rateLimit']['sync'];
export type Credits = Success<'/api/v1/ai/credits'>;
export type LedgerPage = Success<'/api/v1/ai/credits/ledger'>;
export type LedgerEntry = LedgerPage['data'][number];

/**
 * Which billed account a page shows: the caller's own (no workspace), or a workspace's own account
 * (`workspace:<id>`), which its admins may read by passing the workspace.
 */
export interface AccountView { workspaceId?: string }

const viewQuery = (view: AccountView): Record<string, string> => (view.workspaceId ? { workspaceId: view.workspaceId } : {});

export const usageLimits = (view: AccountView = {}) => api('/api/users/me/usage-limits', { query: viewQuery(view) });
export const credits = (view: AccountView = {}) => api('/api/v1/ai/credits', { query: viewQuery(view) });

export function ledger(view: AccountView, cursor: string | undefined, limit = 20): Promise<LedgerPage> {
  return api('/api/v1/ai/credits/ledger', { query: { ...viewQuery(view), limit: String(limit), ...(cursor ? { cursor } : {}) } });
}

export type DailyUsage = Success<'/api/v1/usage/daily'>;
export type DayCost = DailyUsage['data'][number];

/**
 * Cost and charged runs per UTC day over the last `days` days, oldest first (every day present): run
 * base charges and model usage, from GET /api/v1/usage/daily. `workspaceId` is the workspace the
 * caller's account is looked up in; with `workspaceAccount` the workspace's own account is read instead.
 */
export function dailyUsage(workspaceId: string, days: number, workspaceAccount: boolean): Promise<DailyUsage> {
  return api('/api/v1/usage/daily', {
    query: { workspaceId, days: String(days), ...(workspaceAccount ? { account: 'workspace' } : {}) },
  });
}
