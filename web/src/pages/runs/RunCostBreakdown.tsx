// A run's cost split into its base charge and what each model its agent, router and evaluator blocks
// called cost (the logs API's `cost`), with the tokens behind each figure.
import { Table } from '../../ui';
import { formatUsd } from './format';
import type { RunCost } from './api';

interface Row { key: string; label: string; prompt: number | null; completion: number | null; input: number | null; output: number | null; total: number }

const count = (n: number | null) => (n === null ? '—' : n.toLocaleString());

export function RunCostBreakdown({ cost }: { cost: RunCost }) {
  const rows: Row[] = [
    { key: 'base', label: 'Base charge', prompt: null, completion: null, input: null, output: null, total: cost.base },
    ...Object.entries(cost.models).map(([model, m]) => ({
      key: `model:${model}`, label: model, prompt: m.tokens.prompt, completion: m.tokens.completion, input: m.input, output: m.output, total: m.total,
    })),
  ];
  return (
    <>
      <Table
        caption="Cost of this run by base charge and model"
        rows={rows}
        rowKey={(r) => r.key}
        columns={[
          { key: 'what', header: 'Charge', render: (r) => (r.key === 'base' ? r.label : <span className="mono small">{r.label}</span>) },
          { key: 'prompt', header: 'Prompt tokens', className: 'num', render: (r) => count(r.prompt) },
          { key: 'completion', header: 'Completion tokens', className: 'num', render: (r) => count(r.completion) },
          { key: 'input', header: 'Input', className: 'num', render: (r) => (r.input === null ? '—' : formatUsd(r.input)) },
          { key: 'output', header: 'Output', className: 'num', render: (r) => (r.output === null ? '—' : formatUsd(r.output)) },
          { key: 'total', header: 'Total', className: 'num', render: (r) => formatUsd(r.total) },
        ]}
      />
      <p className="small">
        <strong>Total {formatUsd(cost.total)}</strong>
        <span className="muted"> = base {formatUsd(cost.base)} + models {formatUsd(Math.round((cost.total - cost.base) * 1e9) / 1e9)} ({cost.tokens.total.toLocaleString()} tokens)</span>
      </p>
    </>
  );
}
