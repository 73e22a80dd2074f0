import type { Queryable } from '../db/database.js';

// What one run cost, added up from the usage events that carry its execution id (migration 0025): its
// base charge and the model calls of its agent, router and evaluator blocks (child workflows run inside
// their parent's run, so their calls count there). See docs/architecture.md, Per-run cost.

export interface TokenCounts {
  prompt: number;
  completion: number;
  total: number;
}

/** One model's share of a run: USD for prompt (input) and completion (output) tokens, and the tokens. */
export interface ModelCost {
  input: number;
  output: number;
  total: number;
  tokens: TokenCounts;
}

/** A run's cost, USD: `total` = `base` + every model's `total`. */
export interface RunCost {
  total: number;
  /** The run's base charge (0 until it is written, when the run ends). */
  base: number;
  /** Tokens of every model call of the run. */
  tokens: TokenCounts;
  /** By model id (the catalog's). */
  models: Record<string, ModelCost>;
}

const usd = (n: number | string | null | undefined) => Math.round(Number(n ?? 0) * 1e9) / 1e9;

interface CostRow {
  run: string;
  source: string;
  model: string | null;
  cost: string;
  input: string;
  prompt: number | string;
  completion: number | string;
}

/**
 * The cost of each of some runs (stored execution ids); a run with no usage recorded yet is absent. One
 * statement on the execution-id index (and, for base charges written before migration 0025, the
 * idempotency key's unique index), grouped by run and model in the database.
 */
export async function runCosts(q: Queryable, executionIds: readonly string[]): Promise<Map<string, RunCost>> {
  const out = new Map<string, RunCost>();
  if (executionIds.length === 0) return out;
  const rows = await q.query<CostRow>(
    `SELECT COALESCE(execution_id, substr(idempotency_key, 5)) AS run, source,
            CASE WHEN source = 'run' THEN NULL ELSE COALESCE(metadata->>'model', source) END AS model,
            sum(amount_usd)::text AS cost,
            sum(COALESCE((metadata->>'inputUsd')::numeric, 0))::text AS input,
            sum(COALESCE((metadata->>'promptTokens')::bigint, 0))::int8 AS prompt,
            sum(COALESCE((metadata->>'completionTokens')::bigint, 0))::int8 AS completion
       FROM usage_events
      WHERE execution_id = ANY($1::text[]) OR idempotency_key = ANY($2::text[])
      GROUP BY 1, 2, 3`,
    [executionIds, executionIds.map((id) => `run:${id}`)],
  );
  // Sums in nano-USD integers, so the total is exactly base plus the models' totals.
  const nano = (v: string) => Math.round(Number(v) * 1e9);
  const acc = new Map<string, { base: number; models: Map<string, { input: number; total: number; prompt: number; completion: number }> }>();
  for (const r of rows) {
    let a = acc.get(r.run);
    if (!a) acc.set(r.run, (a = { base: 0, models: new Map() }));
    if (r.source === 'run') {
      a.base += nano(r.cost);
      continue;
    }
    const key = r.model ?? r.source;
    const m = a.models.get(key) ?? { input: 0, total: 0, prompt: 0, completion: 0 };
    m.input += nano(r.input);
    m.total += nano(r.cost);
    m.prompt += Number(r.prompt);
    m.completion += Number(r.completion);
    a.models.set(key, m);
  }
  for (const [run, a] of acc) {
    const models: Record<string, ModelCost> = {};
    let total = a.base;
    let prompt = 0;
    let completion = 0;
    for (const [model, m] of [...a.models].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))) {
      // The input part never exceeds the whole (an event without an input figure counts as output).
      const input = Math.min(m.input, m.total);
      models[model] = {
        input: usd(input / 1e9), output: usd((m.total - input) / 1e9), total: usd(m.total / 1e9),
        tokens: { prompt: m.prompt, completion: m.completion, total: m.prompt + m.completion },
      };
      total += m.total;
      prompt += m.prompt;
      completion += m.completion;
    }
    out.set(run, { total: usd(total / 1e9), base: usd(a.base / 1e9), tokens: { prompt, completion, total: prompt + completion }, models });
  }
  return out;
}
