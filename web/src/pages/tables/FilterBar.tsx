// The filter builder: rows of "column, operator, value", matched all or any, applied on submit.
import { useState, type FormEvent } from 'react';
import { Button } from '../../ui';
import { isNumeric, type Column } from './api';
import { opsFor, type Condition, type Match } from './filter';

let nextId = 1;

export function FilterBar({ columns, applied, onApply }: {
  columns: Column[]; applied: { conditions: Condition[]; match: Match }; onApply(conditions: Condition[], match: Match): void;
}) {
  const [conditions, setConditions] = useState<Condition[]>(applied.conditions);
  const [match, setMatch] = useState<Match>(applied.match);
  const first = columns[0];

  const add = () => {
    if (!first) return;
    setConditions([...conditions, { id: nextId++, column: first.name, op: opsFor(first.type, first.multiple)[0]?.op ?? '$eq', value: '' }]);
  };
  const update = (id: number, patch: Partial<Condition>) => setConditions(conditions.map((c) => (c.id === id ? { ...c, ...patch } : c)));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(conditions, match);
  };

  return (
    <form className="tables-filter card" onSubmit={submit} aria-label="Filter rows">
      <div className="row gap tables-filter__head">
        <h2 className="tables-filter__title">Filter</h2>
        {conditions.length > 1 ? (
          <label className="row gap small">
            Match
            <select className="input input-compact" value={match} onChange={(e) => setMatch(e.target.value as Match)}>
              <option value="all">all conditions</option>
              <option value="any">any condition</option>
            </select>
          </label>
        ) : null}
      </div>
      {conditions.length === 0 ? <p className="muted small">No filter: every row is shown.</p> : null}
      <ul className="tables-filter__list">
        {conditions.map((c, i) => {
          const col = columns.find((x) => x.name === c.column) ?? first;
          const ops = col ? opsFor(col.type, col.multiple) : [];
          const needsValue = ops.find((o) => o.op === c.op)?.needsValue ?? true;
          const n = i + 1;
          return (
            <li key={c.id} className="tables-filter__cond">
              <select className="input input-compact" aria-label={`Condition ${n}: column`} value={c.column}
                onChange={(e) => {
                  const nc = columns.find((x) => x.name === e.target.value);
                  update(c.id, { column: e.target.value, op: nc ? opsFor(nc.type, nc.multiple)[0]?.op ?? '$eq' : c.op, value: '' });
                }}>
                {columns.map((x) => <option key={x.name} value={x.name}>{x.name}</option>)}
              </select>
              <select className="input input-compact" aria-label={`Condition ${n}: operator`} value={c.op} onChange={(e) => update(c.id, { op: e.target.value })}>
                {ops.map((o) => <option key={o.op} value={o.op}>{o.label}</option>)}
              </select>
              {!needsValue ? null : col?.type === 'boolean' ? (
                <select className="input input-compact" aria-label={`Condition ${n}: value`} value={c.value} onChange={(e) => update(c.id, { value: e.target.value })}>
                  <option value="">choose…</option><option value="true">true</option><option value="false">false</option>
                </select>
              ) : col?.type === 'select' ? (
                <select className="input input-compact" aria-label={`Condition ${n}: value`} value={c.value} onChange={(e) => update(c.id, { value: e.target.value })}>
                  <option value="">choose…</option>
                  {(col.options ?? []).map((o) => <option key={o.id} value={o.id}>{o.name}</option>)}
                </select>
              ) : (
                <input className="input input-compact" aria-label={`Condition ${n}: value`} value={c.value}
                  type={isNumeric(col?.type) ? 'number' : 'text'} placeholder={col?.type === 'date' ? 'YYYY-MM-DD' : 'value'}
                  onChange={(e) => update(c.id, { value: e.target.value })} />
              )}
              <Button size="sm" variant="ghost" aria-label={`Remove condition ${n}`} onClick={() => setConditions(conditions.filter((x) => x.id !== c.id))}>✕</Button>
            </li>
          );
        })}
      </ul>
      <div className="row gap">
        <Button size="sm" onClick={add} disabled={!first}>+ Add condition</Button>
        <Button size="sm" type="submit" variant="primary">Apply filter</Button>
        {applied.conditions.length > 0 ? (
          <Button size="sm" variant="ghost" onClick={() => { setConditions([]); onApply([], match); }}>Clear</Button>
        ) : null}
      </div>
    </form>
  );
}
