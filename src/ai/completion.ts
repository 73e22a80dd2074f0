// The gateway's completion types, apart from the gateway so the engine's AI port (ai-port.ts), which the
// gateway builds, can depend on them without importing the gateway back.
import type { ModelEntry } from './catalog.js';
import type { ChatCompletion, ChatRequest } from './providers/types.js';

/** Who pays for a request and where it came from. */
export interface Billing {
  /** 'workspace:<id>' or 'user:<id>'. */
  account: string;
  source: 'api' | 'workflow';
  httpRequestId?: string;
  workspaceId?: string | null;
  apiKeyId?: string | null;
  /** The run whose block made the request (stored execution id): its usage counts toward the run's cost. */
  executionId?: string | null;
}

/** Whose provider key paid for a request: the workspace's own (a workspace secret) or the operator's. */
export type KeySource = 'workspace' | 'operator';

export interface CompletionResult {
  completion: ChatCompletion;
  keySource: KeySource;
  /** What was charged: the cost, at most the deposit. */
  costNano: number;
  /** Cost beyond the deposit, not charged (recorded as an overage ledger entry). */
  overageNano: number;
  balanceAfterNano: number;
  model: ModelEntry;
}

/** What the engine's AI port needs of the gateway: one whole completion, billed. */
export interface Completer {
  complete(billing: Billing, request: ChatRequest, signal?: AbortSignal): Promise<CompletionResult>;
}
