// Adding rows: one row through a form, or many from a CSV file (parsed in the browser, inserted in
// batches of up to 1,000 rows; each batch is all or nothing on the server).
import { useState, type FormEvent } from 'react';
import { Button, Dialog, ErrorBanner, InputField } from '../../ui';
import { insertRows, isNumeric, MAX_PAGE, type Column } from './api';
import { parseCell } from './Cell';
import { csvToRows, type CsvImport } from './csv';

export function AddRowDialog({ columns, open, onClose, onSubmit, busy, error }: {
  columns: Column[]; open: boolean; onClose(): void; onSubmit(data: Record<string, unknown>): void; busy: boolean; error: unknown;
}) {
  const [values, setValues] = useState<Record<string, string>>({});
  // Select columns of several options per cell: the option ids checked.
  const [lists, setLists] = useState<Record<string, string[]>>({});
  const [errs, setErrs] = useState<Record<string, string>>({});
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const data: Record<string, unknown> = {};
    const found: Record<string, string> = {};
    for (const c of columns) {
      if (c.type === 'boolean') {
        if (values[c.name] !== undefined) data[c.name] = values[c.name] === 'true';
        continue;
      }
      if (c.type === 'select' && c.multiple) {
        const ids = lists[c.name] ?? [];
        if (ids.length > 0) data[c.name] = ids;
        else if (c.required) found[c.name] = `${c.name} is required`;
        continue;
      }
      const parsed = parseCell(c, values[c.name] ?? '');
      if ('error' in parsed) found[c.name] = parsed.error;
      else if (parsed.value !== null) data[c.name] = parsed.value;
      else if (c.required) found[c.name] = `${c.name} is required`;
    }
    setErrs(found);
    if (Object.keys(found).length === 0) onSubmit(data);
  };
  return (
    <Dialog open={open} title="Add a row" onClose={onClose}>
      <form className="stack" onSubmit={submit} noValidate>
        {columns.map((c) => {
          const label = `${c.name}${c.required ? ' (required)' : ''}`;
          if (c.type === 'boolean') {
            return (
              <label key={c.name} className="checkbox">
                <input type="checkbox" checked={values[c.name] === 'true'} onChange={(e) => setValues({ ...values, [c.name]: String(e.target.checked) })} /> {c.name}
              </label>
            );
          }
          if (c.type === 'select' && c.multiple) {
            const held = lists[c.name] ?? [];
            return (
              <fieldset key={c.name} className="field tables-colfields">
                <legend className="field-label">{label}</legend>
                {(c.options ?? []).map((o) => (
                  <label key={o.id} className="checkbox">
                    <input type="checkbox" checked={held.includes(o.id)}
                      onChange={(e) => setLists({ ...lists, [c.name]: e.target.checked ? [...held, o.id] : held.filter((x) => x !== o.id) })} /> {o.name}
                  </label>
                ))}
                {errs[c.name] ? <div className="field-error" role="alert">{errs[c.name]}</div> : null}
              </fieldset>
            );
          }
          if (c.type === 'select') {
            return (
              <div key={c.name} className="field">
                <label className="field-label" htmlFor={`add-${c.name}`}>{label}</label>
                <select id={`add-${c.name}`} className="input" value={values[c.name] ?? ''} onChange={(e) => setValues({ ...values, [c.name]: e.target.value })}
                  aria-invalid={errs[c.name] ? true : undefined}>
                  <option value="">—</option>
                  {(c.options ?? []).map((o) => <option key={o.id} value={o.id}>{o.name}</option>)}
                </select>
                {errs[c.name] ? <div className="field-error" role="alert">{errs[c.name]}</div> : null}
              </div>
            );
          }
          return (
            <InputField key={c.name} label={label} value={values[c.name] ?? ''} error={errs[c.name]}
              type={isNumeric(c.type) ? 'number' : 'text'} placeholder={c.type === 'date' ? 'YYYY-MM-DD' : c.type === 'json' ? 'JSON' : undefined}
              onChange={(e) => setValues({ ...values, [c.name]: e.target.value })} />
          );
        })}
        <ErrorBanner error={error} />
        <div className="dialog-footer">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" busy={busy}>Add row</Button>
        </div>
      </form>
    </Dialog>
  );
}

export function CsvImportDialog({ workspaceId, tableId, columns, open, onClose, onImported }: {
  workspaceId: string; tableId: string; columns: Column[]; open: boolean; onClose(): void; onImported(count: number): void;
}) {
  const [parsed, setParsed] = useState<(CsvImport & { file: string }) | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);

  const read = async (file: File | undefined) => {
    setParsed(null);
    setError(null);
    if (!file) return;
    try {
      setParsed({ ...(await csvToRows(await file.text(), columns)), file: file.name });
    } catch (err) {
      setError(err);
    }
  };
  const run = async () => {
    if (!parsed) return;
    setError(null);
    let done = 0;
    setProgress({ done, total: parsed.rows.length });
    try {
      for (let i = 0; i < parsed.rows.length; i += MAX_PAGE) {
        done += await insertRows(workspaceId, tableId, parsed.rows.slice(i, i + MAX_PAGE));
        setProgress({ done, total: parsed.rows.length });
      }
      onImported(done);
    } catch (err) {
      setError(done > 0 ? new Error(`${done} rows were imported, then the server refused a batch: ${err instanceof Error ? err.message : String(err)}`) : err);
    } finally {
      setProgress(null);
    }
  };
  const canImport = parsed !== null && parsed.rows.length > 0 && parsed.errors.length === 0 && !progress;
  return (
    <Dialog open={open} title="Import rows from CSV" onClose={onClose} wide>
      <div className="stack">
        <p className="muted small">The first line names the columns ({columns.map((c) => c.name).join(', ')}). Empty cells stay empty.</p>
        <div className="field">
          <label className="field-label" htmlFor="csv-file">CSV file</label>
          <input id="csv-file" type="file" accept=".csv,text/csv" className="input" onChange={(e) => void read(e.target.files?.[0])} />
        </div>
        {parsed ? (
          <div className="stack" aria-live="polite">
            <p><strong>{parsed.rows.length}</strong> rows read from {parsed.file}.</p>
            {parsed.ignoredHeaders.length ? <p className="muted small">Columns not in the table, left out: {parsed.ignoredHeaders.join(', ')}</p> : null}
            {parsed.errors.length ? (
              <div className="banner banner-error" role="alert">
                <div><strong>Fix these first:</strong><ul className="tables-import-errors">{parsed.errors.slice(0, 10).map((e) => <li key={e}>{e}</li>)}</ul>
                  {parsed.errors.length > 10 ? `and ${parsed.errors.length - 10} more` : null}</div>
              </div>
            ) : null}
          </div>
        ) : null}
        {progress ? (
          <div className="stack">
            <label htmlFor="csv-progress" className="small">Importing… {progress.done} of {progress.total}</label>
            <progress id="csv-progress" max={progress.total} value={progress.done} />
          </div>
        ) : null}
        <ErrorBanner error={error} />
        <div className="dialog-footer">
          <Button onClick={onClose} disabled={Boolean(progress)}>Cancel</Button>
          <Button variant="primary" disabled={!canImport} busy={Boolean(progress)} onClick={() => void run()}>
            Import {parsed?.rows.length ?? ''} rows
          </Button>
        </div>
      </div>
    </Dialog>
  );
}
