// /settings/secrets: the workspace's secrets by name (never a value), set or replace one, delete one
// (the answer names the deployed workflows that used it), and when each was last used by a run.
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { deleteSecret, listSecrets, SECRET_NAME_PATTERN, setSecret, type Secret } from '../api/secrets';
import { roleAllows, useSession } from '../session';
import {
  Button, ConfirmDialog, EmptyState, ErrorBanner, InputField, Loading, PageHeader, Table, TextAreaField, formatDate, formatRelative, type Column,
} from '../ui';

function SetSecretForm({ name, setName, onSaved }: { name: string; setName(n: string): void; onSaved(message: string): void }) {
  const { workspaceId } = useSession();
  const [value, setValue] = useState('');
  const nameOk = SECRET_NAME_PATTERN.test(name);
  const m = useMutation({
    mutationFn: () => setSecret(workspaceId, name, value),
    onSuccess: (r) => {
      setValue('');
      setName('');
      onSaved(`${r.created ? 'Created' : 'Replaced'} ${r.name}. Use it as {{${r.name}}} in a block field.`);
    },
  });
  const submit = (e: FormEvent) => { e.preventDefault(); if (nameOk && value) m.mutate(); };
  return (
    <form className="card stack" onSubmit={submit} aria-labelledby="set-secret-title">
      <h2 id="set-secret-title">Set a secret</h2>
      <p className="muted">Setting an existing name replaces its value. Values are encrypted at rest and never shown again, here or anywhere.</p>
      <InputField
        label="Name"
        required
        maxLength={64}
        placeholder="API_TOKEN"
        value={name}
        onChange={(e) => setName(e.target.value.toUpperCase())}
        hint="Upper-case letters, digits and underscores, starting with a letter."
        error={name && !nameOk ? 'Names match ^[A-Z][A-Z0-9_]{0,63}$' : undefined}
      />
      <TextAreaField label="Value" required rows={2} value={value} onChange={(e) => setValue(e.target.value)} autoComplete="off" spellCheck={false} className="mono" />
      <ErrorBanner error={m.error} />
      <div><Button type="submit" variant="primary" busy={m.isPending} disabled={!nameOk || !value}>Save secret</Button></div>
    </form>
  );
}

export default function SecretsPage() {
  const { workspaceId, role, workspaces } = useSession();
  const qc = useQueryClient();
  const canWrite = roleAllows(role, 'write');
  const wsName = workspaces.find((w) => w.id === workspaceId)?.name ?? '';
  const [name, setName] = useState('');
  const [notice, setNotice] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Secret | null>(null);
  const secrets = useQuery({ queryKey: ['secrets', workspaceId], queryFn: () => listSecrets(workspaceId) });
  const remove = useMutation({
    mutationFn: (s: Secret) => deleteSecret(workspaceId, s.name),
    onSuccess: (r) => {
      setDeleting(null);
      setNotice(r.usedBy.length
        ? `Deleted ${r.name}. Deployed workflows that reference it now fail until it is set again: ${r.usedBy.map((w) => w.name).join(', ')}.`
        : `Deleted ${r.name}.`);
      void qc.invalidateQueries({ queryKey: ['secrets', workspaceId] });
    },
  });

  const columns: Column<Secret>[] = [
    { key: 'name', header: 'Name', render: (s) => <code>{s.name}</code> },
    { key: 'updated', header: 'Updated', render: (s) => <span title={formatDate(s.updatedAt)}>{formatRelative(s.updatedAt)}</span> },
    { key: 'used', header: 'Last used', render: (s) => <span title={s.lastUsedAt ? formatDate(s.lastUsedAt) : undefined}>{s.lastUsedAt ? formatRelative(s.lastUsedAt) : 'never'}</span> },
    {
      key: 'actions', header: <span className="sr-only">Actions</span>,
      render: (s) => (canWrite ? (
        <div className="row gap">
          <Button size="sm" aria-label={`Replace ${s.name}`} onClick={() => setName(s.name)}>Replace</Button>
          <Button size="sm" variant="danger" aria-label={`Delete ${s.name}`} onClick={() => { remove.reset(); setDeleting(s); }}>Delete</Button>
        </div>
      ) : null),
    },
  ];

  return (
    <div className="stack">
      <PageHeader
        title="Secrets"
        description={<>Credentials for workflows in <strong>{wsName}</strong>: reference one as <code>{'{{NAME}}'}</code> in any block field. Runs show <code>***</code> wherever a value would appear.</>}
      />
      {notice ? <div className="banner" role="status">{notice}</div> : null}
      {canWrite ? <SetSecretForm name={name} setName={setName} onSaved={(m) => { setNotice(m); void qc.invalidateQueries({ queryKey: ['secrets', workspaceId] }); }} /> : null}
      <section className="stack" aria-labelledby="secrets-title">
        <h2 id="secrets-title">Secrets</h2>
        {secrets.isPending ? <Loading /> : null}
        <ErrorBanner error={secrets.error} onRetry={() => void secrets.refetch()} />
        {secrets.data ? (
          <Table
            caption="Secrets"
            columns={columns}
            rows={secrets.data}
            rowKey={(s) => s.name}
            empty={<EmptyState title="No secrets yet">Set one above, then use it as {'{{NAME}}'} in a block.</EmptyState>}
          />
        ) : null}
      </section>
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete ${deleting?.name ?? ''}?`}
        message="Deployed workflows that reference it fail at the block that needs it until it is set again."
        confirmLabel="Delete secret"
        danger
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => deleting && remove.mutate(deleting)}
        onCancel={() => setDeleting(null)}
      />
    </div>
  );
}
