// Helpers of the blocks that reach a language model (agent, router, evaluator) through the AI
// port (ctx.ports.ai, declared in ../ports.ts). The engine stays pure; the AI gateway supplies the
// adapter (it routes to the provider and bills the run's account through the credit ledger).
import type { BlockContext } from '../block-type.js';
import type { AiPort, ChatResponse, ChatUsage } from '../ports.js';

// The port types live in ../ports.ts; re-exported here for existing importers.
export type { AiMessage, AiPort, AiTool, AiToolCall, ChatRequest, ChatResponse, ChatUsage } from '../ports.js';

export function aiPortOf(ctx: BlockContext): AiPort {
  const port = ctx.ports.ai;
  if (!port) throw new Error('AI models are not available in this context');
  return port;
}

/** Sums usage and cost over several calls (an agent's tool loop). */
export class UsageTotals {
  promptTokens = 0;
  completionTokens = 0;
  costUsd = 0;

  add(r: ChatResponse): void {
    this.promptTokens += r.usage.promptTokens;
    this.completionTokens += r.usage.completionTokens;
    this.costUsd += r.costUsd;
  }

  tokens(): ChatUsage {
    return { promptTokens: this.promptTokens, completionTokens: this.completionTokens, totalTokens: this.promptTokens + this.completionTokens };
  }

  cost(): number {
    return Math.round(this.costUsd * 1e9) / 1e9;
  }
}

/** A config number that may still be a reference's string value. */
export function numberOf(value: unknown, what: string, min: number, max: number): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`${what} must be a number from ${min} to ${max}; got ${JSON.stringify(value)}`);
  return n;
}

/** Config text (references resolved); objects are shown as JSON. */
export function textOf(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Parses the model's JSON answer; a clear error when it is not JSON. */
export function parseJsonAnswer(content: string | null, what: string): unknown {
  if (!content) throw new Error(`${what}: the model gave no answer`);
  const trimmed = content.trim().replace(/^```(?:json)?\s*/i, '').replace(/\s*```$/, '');
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    throw new Error(`${what}: the model's answer is not JSON: ${content.slice(0, 200)}`);
  }
}
