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

export const usageLimits = () => apiFetch<UsageLimits>('/api/users/me/usage-limits');
export const credits = () => apiFetch<Credits>('/api/v1/ai/credits');

export function ledger(cursor: string | undefined, limit = 20): Promise<LedgerPage> {
  return apiFetch<LedgerPage>('/api/v1/ai/credits/ledger', { query: { limit: String(limit), ...(cursor ? { cursor } : {}) } });
}

export interface DayCost { date: string; costUsd: number }

/** UTC calendar day of an ISO time, YYYY-MM-DD. */
const dayOf = (iso: string) => iso.slice(0, 10);

/** The last `n` UTC days ending today, oldest first, each with zero cost. */
export function lastDays(n: number, now = new Date()): DayCost[] {
  const out: DayCost[] = [];
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  for (let i = n - 1; i >= 0; i--) out.push({ date: new Date(today - i * 86_400_000).toISOString().slice(0, 10), costUsd: 0 });
  return out;
}

/**
 * AI credit spent per day over the last `n` days: the costs of the ledger's settle entries. The usage
 * events behind the period's cost (run base charges included) have no per-day route yet.
 */
export async function dailyCost(n = 30): Promise<{ days: DayCost[] }> {
  const days = lastDays(n);
  const index = new Map(days.map((d, i) => [d.date, i]));
  const since = days[0]?.date ?? '';
  let cursor: string | undefined;
  // At most 10 pages of 200 entries: enough for a month of a small account; the chart is indicative.
  for (let page = 0; page < 10; page++) {
    const r = await ledger(cursor, 200);
    for (const e of r.data) {
      const i = index.get(dayOf(e.createdAt));
      if (i !== undefined && e.costUsd !== null && e.kind === 'settle') {
        const d = days[i] as DayCost;
        days[i] = { date: d.date, costUsd: d.costUsd + e.costUsd };
      }
    }
    const last = r.data[r.data.length - 1];
    cursor = r.nextCursor;
    if (!cursor || !last || dayOf(last.createdAt) < since) break;
  }
  return { days };
}
