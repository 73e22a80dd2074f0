// The AI port: how the agent, router and evaluator blocks reach a language model. The engine
// stays pure; the AI gateway supplies the adapter (it routes to the provider and bills the run's
// account through the credit ledger) as ctx.ports.ai.
import type { BlockContext } from '../block-type.js';

export interface AiToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments, as the model wrote it. */
  arguments: string;
}

export type AiMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: AiToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface AiTool {
  name: string;
  description?: string;
  /** JSON schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  model: string;
  messages: AiMessage[];
  temperature?: number;
  maxTokens?: number;
  tools?: AiTool[];
  toolChoice?: 'auto' | 'none' | 'required' | { name: string };
  /** Structured output: the answer is JSON matching this schema. */
  responseSchema?: { name: string; schema: Record<string, unknown> };
  signal?: AbortSignal;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatResponse {
  /** The model's text (the JSON text with responseSchema); null when it only called tools. */
  content: string | null;
  toolCalls: AiToolCall[];
  finishReason: string;
  usage: ChatUsage;
  /** What the call cost, USD. */
  costUsd: number;
  model: string;
}

/** Throws Error(message) on refusal (unknown model, credits, provider failure). */
export interface AiPort {
  chat(request: ChatRequest): Promise<ChatResponse>;
}

export function aiPortOf(ctx: BlockContext): AiPort {
  const port = ctx.ports.ai as AiPort | undefined;
  if (!port || typeof port.chat !== 'function') throw new Error('AI models are not available in this context');
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
