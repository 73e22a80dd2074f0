// "Locks" on a table: which kinds of change the table refuses (423). Only workspace admins may change them;
// for others the save answers 403, shown in the dialog.
import { useState, type FormEvent } from 'react';
import { Button, Dialog, ErrorBanner } from '../../ui';
import type { TableLocks } from './api';

const FLAGS: { key: keyof TableLocks; label: string; hint: string }[] = [
  { key: 'schemaLocked', label: 'Schema', hint: 'no column can be added, changed or deleted' },
  { key: 'insertLocked', label: 'Inserts', hint: 'no row can be added' },
  { key: 'updateLocked', label: 'Updates', hint: 'no row can be changed' },
  { key: 'deleteLocked', label: 'Deletes', hint: 'no row, nor the table, can be deleted' },
];

/** The locked kinds as a short phrase for the page header ("inserts, deletes locked"), or null when none are. */
export function describeLocks(locks: TableLocks): string | null {
  const on = FLAGS.filter((f) => locks[f.key]).map((f) => f.label.toLowerCase());
  return on.length ? `${on.join(', ')} locked` : null;
}

export function LocksDialog({ open, locks, onClose, onSubmit, busy, error }: {
  open: boolean; locks: TableLocks; onClose(): void; onSubmit(l: TableLocks): void; busy: boolean; error: unknown;
}) {
  // Mounted when opened (see TableView), so the draft starts from the table's locks as they are then.
  const [draft, setDraft] = useState<TableLocks>(locks);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit(draft);
  };
  return (
    <Dialog open={open} title="Table locks" onClose={onClose}>
      <form className="stack" onSubmit={submit}>
        <p className="muted">A locked kind of change is refused for everyone, API keys and workflows included, until a workspace admin unlocks it.</p>
        <fieldset className="stack">
          <legend className="sr-only">Locked changes</legend>
          {FLAGS.map((f) => (
            <label key={f.key} className="checkbox">
              <input type="checkbox" checked={draft[f.key]} onChange={(e) => setDraft({ ...draft, [f.key]: e.target.checked })} />
              {' '}{f.label}: <span className="muted">{f.hint}</span>
            </label>
          ))}
        </fieldset>
        {error ? <ErrorBanner error={error} /> : null}
        <div className="row gap">
          <Button type="submit" variant="primary" busy={busy}>Save</Button>
          <Button type="button" variant="ghost" onClick={onClose}>Cancel</Button>
        </div>
      </form>
    </Dialog>
  );
}
