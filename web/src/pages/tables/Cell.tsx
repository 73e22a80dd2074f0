// One table cell with inline editing. Text-like cells show their value as a button; activating it
// swaps in an editor (Enter or leaving the field saves, Escape cancels). Booleans are a checkbox and
// select columns a menu (a list of checkboxes when the column takes several options), saved on change. Select
// cells hold option ids and show the options' names. The server validates every value (a 400 names the problem).
import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { isNumeric, selectText, type Column } from './api';

/** A cell value as text in the grid and in its editor. */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Editor text to the value sent to the API: empty clears the cell (null). */
export function parseCell(col: Column, text: string): { value: unknown } | { error: string } {
  const t = text.trim();
  if (t === '') return { value: null };
  if (isNumeric(col.type)) {
    const n = Number(t);
    return Number.isFinite(n) ? { value: n } : { error: `${col.name}: "${t}" is not a number` };
  }
  if (col.type === 'json') {
    try {
      return { value: JSON.parse(t) as unknown };
    } catch {
      return { error: `${col.name}: not valid JSON` };
    }
  }
  return { value: col.type === 'string' ? text : t };
}

export function Cell({ col, value, rowLabel, onSave, disabled }: {
  col: Column; value: unknown; rowLabel: string; onSave(value: unknown): Promise<void>; disabled?: boolean;
}) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // The text the server last refused: leaving the field does not send it again.
  const [refused, setRefused] = useState<string | null>(null);
  const inputRef = useRef<HTMLInputElement>(null);
  const buttonRef = useRef<HTMLButtonElement>(null);
  const label = `${col.name}, ${rowLabel}`;

  useEffect(() => {
    if (editing) inputRef.current?.select();
  }, [editing]);

  const save = async (next: unknown) => {
    setBusy(true);
    setError(null);
    try {
      await onSave(next);
      return true;
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      return false;
    } finally {
      setBusy(false);
    }
  };

  if (col.type === 'boolean') {
    return (
      <label className="tables-cell-bool">
        <input type="checkbox" checked={value === true} disabled={busy || disabled} aria-label={label} aria-invalid={error ? true : undefined}
          onChange={(e) => void save(e.target.checked)} />
        {error ? <span className="tables-cell-error" role="alert">{error}</span> : null}
      </label>
    );
  }
  if (col.type === 'select' && col.multiple) {
    const held = Array.isArray(value) ? value.filter((x): x is string => typeof x === 'string') : typeof value === 'string' ? [value] : [];
    const shown = selectText(col, value);
    const toggle = (id: string, on: boolean) => {
      const next = on ? [...held, id] : held.filter((x) => x !== id);
      void save(next);
    };
    return (
      <details className="tables-cell-multi">
        <summary className="tables-cell" aria-label={`${label}: ${shown || 'empty'}. Choose options`}>
          {shown === '' ? <span className="muted" aria-hidden="true">—</span> : shown}
        </summary>
        <fieldset className="tables-cell-multi__list" disabled={busy || disabled}>
          <legend className="sr-only">{label}</legend>
          {(col.options ?? []).map((o) => (
            <label key={o.id} className="checkbox">
              <input type="checkbox" checked={held.includes(o.id)} onChange={(e) => toggle(o.id, e.target.checked)} /> {o.name}
            </label>
          ))}
        </fieldset>
        {error ? <span className="tables-cell-error" role="alert">{error}</span> : null}
      </details>
    );
  }
  if (col.type === 'select') {
    const options = col.options ?? [];
    const current = typeof value === 'string' ? value : '';
    return (
      <>
        <select className="input input-compact tables-cell-select" value={current} disabled={busy || disabled} aria-label={label}
          onChange={(e) => void save(e.target.value === '' ? null : e.target.value)}>
          <option value="">—</option>
          {options.map((o) => <option key={o.id} value={o.id}>{o.name}</option>)}
          {current !== '' && !options.some((o) => o.id === current) ? <option value={current}>{current}</option> : null}
        </select>
        {error ? <span className="tables-cell-error" role="alert">{error}</span> : null}
      </>
    );
  }

  const finish = async () => {
    if (!editing || busy) return;
    if (text === cellText(value)) {
      setEditing(false);
      setError(null);
      return;
    }
    if (text === refused) return;
    const parsed = parseCell(col, text);
    if ('error' in parsed) {
      setError(parsed.error);
      return;
    }
    if (await save(parsed.value)) {
      setEditing(false);
      setRefused(null);
      buttonRef.current?.focus();
    } else {
      setRefused(text);
    }
  };
  const onKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      void finish();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      setEditing(false);
      setError(null);
      setRefused(null);
    }
  };

  if (editing) {
    return (
      <span className="tables-cell-edit">
        <input ref={inputRef} className="input tables-cell-input" value={text} disabled={busy} aria-label={`Edit ${label}`}
          aria-invalid={error ? true : undefined} autoFocus
          placeholder={col.type === 'date' ? 'YYYY-MM-DD' : col.type === 'json' ? 'JSON' : ''}
          onChange={(e) => setText(e.target.value)} onKeyDown={onKey} onBlur={() => void finish()} />
        {error ? <span className="tables-cell-error" role="alert">{error}</span> : null}
      </span>
    );
  }
  const shown = cellText(value);
  return (
    <button ref={buttonRef} type="button" className={`tables-cell${isNumeric(col.type) ? ' tables-cell--num' : ''}`} disabled={disabled}
      aria-label={`${label}: ${shown || 'empty'}. Edit`}
      onClick={() => { setText(shown); setError(null); setEditing(true); }}>
      {shown === '' ? <span className="muted" aria-hidden="true">—</span> : shown}
    </button>
  );
}
