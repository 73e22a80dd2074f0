// /settings/api-keys: create a key (shown once), list the workspace's keys, revoke them, and (admins)
// allow or refuse personal keys in the workspace. The server enforces every rule; the page explains them.
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError } from '../api/client';
import { createKey, getWorkspace, listKeys, revokeKey, setAllowPersonalKeys, type ApiKey } from '../api/keys';
import { roleAllows, useSession } from '../session';
import {
  Button, ConfirmDialog, CopyButton, Dialog, EmptyState, ErrorBanner, InputField, Loading, PageHeader, SelectField,
  StatusBadge, Table, formatDate, formatRelative, type Column,
} from '../ui';

function CreatedKeyDialog({ created, onClose }: { created: (ApiKey & { key: string }) | null; onClose(): void }) {
  const { workspaceId } = useSession();
  return (
    <Dialog
      wide
      open={created !== null}
      title="Your new API key"
      onClose={onClose}
      footer={<Button variant="primary" onClick={onClose}>Done, I saved it</Button>}
    >
      {created ? (
        <div className="stack">
          <div className="banner banner-warn" role="note">Copy this key now. It is shown only once and cannot be viewed again.</div>
          <div className="secret">
            <code data-testid="new-api-key" aria-label="New API key">{created.key}</code>
            <CopyButton text={created.key} label="Copy key" />
          </div>
          <p className="muted small">Send it as the <code>X-API-Key</code> header, for example:</p>
          <pre className="small">{`curl -H "X-API-Key: ${created.key}" \\
  "${window.location.origin}/api/v1/workflows?workspaceId=${workspaceId}"`}</pre>
        </div>
      ) : null}
    </Dialog>
  );
}

function CreateKeyForm({ allowPersonal, isAdmin, onCreated }: { allowPersonal: boolean | undefined; isAdmin: boolean; onCreated(k: ApiKey & { key: string }): void }) {
  const { workspaceId } = useSession();
  const [name, setName] = useState('');
  const defaultType: ApiKey['type'] = isAdmin ? 'workspace' : 'personal';
  const [type, setType] = useState<ApiKey['type'] | ''>('');
  const chosen = type || defaultType;
  const m = useMutation({
    mutationFn: () => createKey(workspaceId, name.trim(), chosen),
    onSuccess: (k) => { setName(''); onCreated(k); },
  });
  const submit = (e: FormEvent) => { e.preventDefault(); if (name.trim()) m.mutate(); };
  const typeHint = chosen === 'workspace'
    ? 'Acts as this workspace (not as you), works only here, billed to the workspace. Workspace admins only.'
    : 'Acts as you in every workspace you belong to that allows personal keys, billed to you.';
  const blocked = chosen === 'workspace' ? (!isAdmin ? 'Only workspace admins can create workspace keys.' : undefined)
    : (allowPersonal === false ? 'This workspace does not allow personal keys.' : undefined);
  return (
    <form className="card stack" onSubmit={submit} aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create a key</h2>
      <div className="grid-2">
        <InputField label="Name" required maxLength={100} placeholder="e.g. ci, zapier, laptop" value={name} onChange={(e) => setName(e.target.value)} />
        <SelectField
          label="Type"
          value={chosen}
          onChange={(e) => setType(e.target.value as ApiKey['type'])}
          options={[{ value: 'workspace', label: 'Workspace key' }, { value: 'personal', label: 'Personal key' }]}
          hint={typeHint}
        />
      </div>
      {blocked ? <div className="banner banner-warn">{blocked}</div> : null}
      <ErrorBanner error={m.error} />
      <div><Button type="submit" variant="primary" busy={m.isPending} disabled={!name.trim()}>Create key</Button></div>
    </form>
  );
}

function PersonalKeysSetting({ allow, onChange }: { allow: boolean; onChange(): void }) {
  const { workspaceId } = useSession();
  const [confirm, setConfirm] = useState(false);
  const m = useMutation({
    mutationFn: (next: boolean) => setAllowPersonalKeys(workspaceId, next),
    onSuccess: () => { setConfirm(false); onChange(); },
  });
  return (
    <section className="card stack" aria-labelledby="personal-keys-title">
      <h2 id="personal-keys-title">Personal keys in this workspace</h2>
      <p className="muted">When personal keys are refused, only workspace keys work here; members' personal keys keep working in their other workspaces. Signing in to the dashboard is not affected.</p>
      <div className="row gap">
        <StatusBadge status={allow ? 'active' : 'revoked'} label={allow ? 'Allowed' : 'Refused'} />
        {allow
          ? <Button variant="danger" onClick={() => setConfirm(true)}>Refuse personal keys</Button>
          : <Button busy={m.isPending} onClick={() => m.mutate(true)}>Allow personal keys</Button>}
      </div>
      <ErrorBanner error={!confirm ? m.error : null} />
      <ConfirmDialog
        open={confirm}
        title="Refuse personal keys?"
        message="Every personal key stops working in this workspace at once. Workspace keys and dashboard sessions keep working."
        confirmLabel="Refuse personal keys"
        danger
        busy={m.isPending}
        error={m.error}
        onConfirm={() => m.mutate(false)}
        onCancel={() => setConfirm(false)}
      />
    </section>
  );
}

export default function ApiKeysPage() {
  const { workspaceId, role, user, workspaces } = useSession();
  const qc = useQueryClient();
  const isAdmin = roleAllows(role, 'admin');
  const wsName = workspaces.find((w) => w.id === workspaceId)?.name ?? '';
  const [created, setCreated] = useState<(ApiKey & { key: string }) | null>(null);
  const [madeHere, setMadeHere] = useState<ApiKey[]>([]);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);

  const ws = useQuery({ queryKey: ['workspace', workspaceId], queryFn: () => getWorkspace(workspaceId) });
  const keys = useQuery({ queryKey: ['keys', workspaceId], queryFn: () => listKeys(workspaceId), enabled: isAdmin });
  const revoke = useMutation({
    mutationFn: (k: ApiKey) => revokeKey(k.id),
    onSuccess: (_r, k) => {
      setRevoking(null);
      setMadeHere((list) => list.filter((x) => x.id !== k.id));
      void qc.invalidateQueries({ queryKey: ['keys', workspaceId] });
    },
  });

  const rows = isAdmin ? (keys.data ?? []) : madeHere.filter((k) => k.workspaceId === workspaceId || k.type === 'personal');
  const canRevoke = (k: ApiKey) => (k.type === 'workspace' ? isAdmin : k.userId === user.id);
  const columns: Column<ApiKey>[] = [
    { key: 'name', header: 'Name', render: (k) => <strong>{k.name}</strong> },
    { key: 'type', header: 'Type', render: (k) => (k.type === 'workspace' ? 'Workspace' : k.userId === user.id ? 'Personal (yours)' : 'Personal (a member\'s)') },
    { key: 'key', header: 'Key', render: (k) => <code>{k.displayKey}</code> },
    { key: 'created', header: 'Created', render: (k) => <span title={formatDate(k.createdAt)}>{formatRelative(k.createdAt)}</span> },
    { key: 'used', header: 'Last used', render: (k) => <span title={k.lastUsedAt ? formatDate(k.lastUsedAt) : undefined}>{formatRelative(k.lastUsedAt)}</span> },
    {
      key: 'actions', header: <span className="sr-only">Actions</span>,
      render: (k) => (canRevoke(k) ? <Button size="sm" variant="danger" aria-label={`Revoke ${k.name}`} onClick={() => { revoke.reset(); setRevoking(k); }}>Revoke</Button> : null),
    },
  ];

  return (
    <div className="stack">
      <PageHeader title="API keys" description={<>Keys for calling Weft's API from scripts and services, in the workspace <strong>{wsName}</strong>.</>} />
      <CreateKeyForm
        allowPersonal={ws.data?.allowPersonalKeys}
        isAdmin={isAdmin}
        onCreated={(k) => {
          setCreated(k);
          const { key: _secret, ...rest } = k; // the secret is never kept after the dialog closes
          setMadeHere((list) => [...list, rest]);
          void qc.invalidateQueries({ queryKey: ['keys', workspaceId] });
        }}
      />
      <section className="stack" aria-labelledby="keys-title">
        <h2 id="keys-title">Keys</h2>
        {!isAdmin ? <p className="muted">Only workspace admins can list every key of the workspace. Keys you create here are listed until you leave the page.</p> : null}
        {isAdmin && keys.isPending ? <Loading /> : null}
        <ErrorBanner error={keys.error} onRetry={() => void keys.refetch()} />
        {(!isAdmin || keys.data) ? (
          <Table
            caption="API keys"
            columns={columns}
            rows={rows}
            rowKey={(k) => k.id}
            empty={<EmptyState title="No keys yet">Create one above; it is shown once.</EmptyState>}
          />
        ) : null}
      </section>
      {isAdmin && ws.data ? <PersonalKeysSetting allow={ws.data.allowPersonalKeys} onChange={() => void qc.invalidateQueries({ queryKey: ['workspace', workspaceId] })} /> : null}
      {ws.error && !(ws.error instanceof ApiError && ws.error.status === 403) ? <ErrorBanner error={ws.error} /> : null}
      <CreatedKeyDialog created={created} onClose={() => setCreated(null)} />
      <ConfirmDialog
        open={revoking !== null}
        title={`Revoke "${revoking?.name ?? ''}"?`}
        message={<>Requests with <code>{revoking?.displayKey}</code> are refused within a few seconds. This cannot be undone.</>}
        confirmLabel="Revoke key"
        danger
        busy={revoke.isPending}
        error={revoke.error}
        onConfirm={() => revoking && revoke.mutate(revoking)}
        onCancel={() => setRevoking(null)}
      />
    </div>
  );
}
