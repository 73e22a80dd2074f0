// Dialogs that define columns: "Add column" on a table, and "New table" (a name and its first columns).
import { useState, type FormEvent } from 'react';
import { Button, Dialog, ErrorBanner, InputField, SelectField } from '../../ui';
import { COLUMN_TYPES, type ColumnType, type NewColumn } from './api';

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const nameError = (name: string) => (name === '' ? 'A name is required' : NAME_RE.test(name) ? undefined : 'Letters, digits and underscores, not starting with a digit');

export interface ColumnDraft { name: string; type: ColumnType; required: boolean; unique: boolean; options: string; multiple: boolean }
export const emptyColumn = (): ColumnDraft => ({ name: '', type: 'string', required: false, unique: false, options: '', multiple: false });

/**
 * A draft as the API's column: select options from a comma-separated list of names (each option's id is then its
 * name), and whether a cell takes several of them.
 */
export function toColumn(d: ColumnDraft): NewColumn {
  const options = d.options.split(',').map((s) => s.trim()).filter(Boolean);
  return {
    name: d.name.trim(), type: d.type, required: d.required, unique: d.unique && d.type !== 'select',
    ...(d.type === 'select' ? { options, multiple: d.multiple } : {}),
  };
}

export function draftErrors(d: ColumnDraft): Partial<Record<'name' | 'options', string>> {
  const e: Partial<Record<'name' | 'options', string>> = {};
  const n = nameError(d.name.trim());
  if (n) e.name = n;
  if (d.type === 'select' && toColumn(d).options?.length === 0) e.options = 'A select column needs at least one option';
  return e;
}

/** The fields of one column draft. `legend` names it for screen readers when there are several. */
export function ColumnFields({ draft, onChange, errors, legend }: {
  draft: ColumnDraft; onChange(d: ColumnDraft): void; errors: Partial<Record<'name' | 'options', string>>; legend: string;
}) {
  return (
    <fieldset className="tables-colfields">
      <legend className="sr-only">{legend}</legend>
      <InputField label="Column name" value={draft.name} onChange={(e) => onChange({ ...draft, name: e.target.value })} error={errors.name} autoComplete="off" />
      <SelectField label="Type" value={draft.type} onChange={(e) => onChange({ ...draft, type: e.target.value as ColumnType })}
        options={COLUMN_TYPES.map((t) => ({ value: t, label: t }))} />
      {draft.type === 'select' ? (
        <InputField label="Options" hint="Comma-separated" value={draft.options} onChange={(e) => onChange({ ...draft, options: e.target.value })} error={errors.options} />
      ) : null}
      <div className="row gap tables-colfields__flags">
        <label className="checkbox"><input type="checkbox" checked={draft.required} onChange={(e) => onChange({ ...draft, required: e.target.checked })} /> Required</label>
        {draft.type === 'select' ? (
          <label className="checkbox"><input type="checkbox" checked={draft.multiple} onChange={(e) => onChange({ ...draft, multiple: e.target.checked })} /> Multiple</label>
        ) : (
          <label className="checkbox"><input type="checkbox" checked={draft.unique} onChange={(e) => onChange({ ...draft, unique: e.target.checked })} /> Unique</label>
        )}
      </div>
    </fieldset>
  );
}

export function AddColumnDialog({ open, onClose, onSubmit, busy, error }: {
  open: boolean; onClose(): void; onSubmit(c: NewColumn): void; busy: boolean; error: unknown;
}) {
  const [draft, setDraft] = useState<ColumnDraft>(emptyColumn);
  const [shown, setShown] = useState<Partial<Record<'name' | 'options', string>>>({});
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errs = draftErrors(draft);
    setShown(errs);
    if (Object.keys(errs).length === 0) onSubmit(toColumn(draft));
  };
  return (
    <Dialog open={open} title="Add a column" onClose={onClose}>
      <form className="stack" onSubmit={submit} noValidate>
        <ColumnFields draft={draft} onChange={setDraft} errors={shown} legend="New column" />
        <p className="muted small">A required column cannot be added to a table that has rows.</p>
        <ErrorBanner error={error} />
        <div className="dialog-footer">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" busy={busy}>Add column</Button>
        </div>
      </form>
    </Dialog>
  );
}

export function NewTableDialog({ open, onClose, onSubmit, busy, error }: {
  open: boolean; onClose(): void; onSubmit(name: string, columns: NewColumn[]): void; busy: boolean; error: unknown;
}) {
  const [name, setName] = useState('');
  const [drafts, setDrafts] = useState<ColumnDraft[]>(() => [emptyColumn()]);
  const [shown, setShown] = useState<{ name?: string; columns: Partial<Record<'name' | 'options', string>>[] }>({ columns: [] });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errs = { name: nameError(name.trim()), columns: drafts.map(draftErrors) };
    setShown(errs);
    if (!errs.name && errs.columns.every((c) => Object.keys(c).length === 0)) onSubmit(name.trim(), drafts.map(toColumn));
  };
  return (
    <Dialog open={open} title="New table" onClose={onClose} wide>
      <form className="stack" onSubmit={submit} noValidate>
        <InputField label="Table name" value={name} onChange={(e) => setName(e.target.value)} error={shown.name} autoComplete="off" />
        {drafts.map((d, i) => (
          <div key={i} className="tables-newcol">
            <ColumnFields legend={`Column ${i + 1}`} draft={d} errors={shown.columns[i] ?? {}}
              onChange={(next) => setDrafts(drafts.map((x, j) => (j === i ? next : x)))} />
            {drafts.length > 1 ? <Button size="sm" variant="ghost" aria-label={`Remove column ${i + 1}`} onClick={() => setDrafts(drafts.filter((_, j) => j !== i))}>Remove</Button> : null}
          </div>
        ))}
        <div><Button size="sm" onClick={() => setDrafts([...drafts, emptyColumn()])}>+ Another column</Button></div>
        <ErrorBanner error={error} />
        <div className="dialog-footer">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" busy={busy}>Create table</Button>
        </div>
      </form>
    </Dialog>
  );
}
