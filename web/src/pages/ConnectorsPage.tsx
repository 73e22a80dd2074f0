// /connectors: the workspace's connectors (OpenAPI documents whose operations become blocks and agent
// tools, docs/architecture.md "Connectors"). Add one from a pasted document or a URL with its auth
// secret, see each one's operations, delete one. The API's refusals show inline.
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { listSecrets } from '../api/secrets';
import { roleAllows, useSession } from '../session';
import {
  Button, ConfirmDialog, EmptyState, ErrorBanner, InputField, Loading, PageHeader, SelectField, Table, TextAreaField, formatRelative, type Column,
} from '../ui';
import { createConnector, deleteConnector, listConnectors, type Connector, type ConnectorAuthType, type ConnectorOperation, type NewConnector } from './connectors/api';
import './connectors/connectors.css';

type Source = 'document' | 'url';

const AUTH_OPTIONS: { value: '' | ConnectorAuthType; label: string }[] = [
  { value: '', label: 'None' },
  { value: 'bearer', label: 'Bearer token (Authorization header)' },
  { value: 'header', label: 'API key in a header' },
  { value: 'query', label: 'API key in a query parameter' },
  { value: 'basic', label: 'Basic (secret holds user:password)' },
];

/** The pasted text as a JSON object, or a message saying why it is not one. */
function parseDocument(text: string): { doc?: Record<string, unknown>; error?: string } {
  if (!text.trim()) return { error: 'Paste an OpenAPI 3.0 or 3.1 document (JSON).' };
  try {
    const v: unknown = JSON.parse(text);
    if (!v || typeof v !== 'object' || Array.isArray(v)) return { error: 'The document must be a JSON object.' };
    return { doc: v as Record<string, unknown> };
  } catch (err) {
    return { error: `Not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function AddConnectorForm({ onAdded, onCancel }: { onAdded(c: Connector): void; onCancel?(): void }) {
  const { workspaceId } = useSession();
  const [name, setName] = useState('');
  const [source, setSource] = useState<Source>('document');
  const [docText, setDocText] = useState('');
  const [specUrl, setSpecUrl] = useState('');
  const [baseUrl, setBaseUrl] = useState('');
  const [authType, setAuthType] = useState<'' | ConnectorAuthType>('');
  const [secret, setSecret] = useState('');
  const [authName, setAuthName] = useState('');
  const [docError, setDocError] = useState<string | null>(null);
  const secrets = useQuery({ queryKey: ['secrets', workspaceId], queryFn: () => listSecrets(workspaceId) });
  const secretNames = (secrets.data ?? []).map((s) => s.name);
  const needsName = authType === 'header' || authType === 'query';

  const add = useMutation({
    mutationFn: (input: NewConnector) => createConnector(workspaceId, input),
    onSuccess: (c) => {
      setName(''); setDocText(''); setSpecUrl(''); setBaseUrl(''); setAuthType(''); setSecret(''); setAuthName('');
      onAdded(c);
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const input: NewConnector = { name: name.trim() };
    if (source === 'document') {
      const parsed = parseDocument(docText);
      setDocError(parsed.error ?? null);
      if (!parsed.doc) return;
      input.spec = parsed.doc;
    } else {
      input.specUrl = specUrl.trim();
    }
    if (baseUrl.trim()) input.baseUrl = baseUrl.trim();
    if (authType) input.auth = { type: authType, secret, ...(needsName && authName.trim() ? { name: authName.trim() } : {}) };
    add.mutate(input);
  };

  const ready = name.trim() !== '' && (source === 'document' ? docText.trim() !== '' : specUrl.trim() !== '') && (!authType || secret !== '');
  return (
    <form className="card stack" onSubmit={submit} aria-labelledby="add-connector-title">
      <h2 id="add-connector-title">Add a connector</h2>
      <p className="muted">An OpenAPI 3.0 or 3.1 document (JSON). Each operation becomes a block in the editor's palette and a tool agents can use.</p>
      <InputField label="Name" required maxLength={200} placeholder="Billing API" value={name} onChange={(e) => setName(e.target.value)} />
      <fieldset className="fieldset connector-source">
        <legend>Document</legend>
        <div className="row gap">
          <label className="checkbox"><input type="radio" name="connector-source" checked={source === 'document'} onChange={() => setSource('document')} /> Paste it</label>
          <label className="checkbox"><input type="radio" name="connector-source" checked={source === 'url'} onChange={() => setSource('url')} /> Fetch it from a URL</label>
        </div>
        {source === 'document' ? (
          <TextAreaField label="OpenAPI document (JSON)" rows={10} className="mono" spellCheck={false} value={docText}
            onChange={(e) => { setDocText(e.target.value); setDocError(null); }} error={docError ?? undefined}
            placeholder={'{ "openapi": "3.1.0", "info": { "title": "…", "version": "1" }, "paths": { … } }'} />
        ) : (
          <InputField label="Document URL" type="url" placeholder="https://api.example.com/openapi.json" value={specUrl} onChange={(e) => setSpecUrl(e.target.value)}
            hint="Fetched once by the server, through the same outbound guard as the HTTP block (at most 5 MiB)." />
        )}
      </fieldset>
      <InputField label="Base URL (optional)" type="url" placeholder="https://api.example.com/v1" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)}
        hint="Replaces the document's servers; needed when the document has none or only relative ones." />
      <fieldset className="fieldset">
        <legend>Authentication</legend>
        <div className="grid-2">
          <SelectField label="Type" value={authType} options={AUTH_OPTIONS} onChange={(e) => setAuthType(e.target.value as '' | ConnectorAuthType)} />
          {authType ? (
            <SelectField label="Secret" value={secret} onChange={(e) => setSecret(e.target.value)}
              options={[{ value: '', label: secretNames.length ? 'Choose a secret' : 'No secrets yet' }, ...secretNames.map((n) => ({ value: n, label: n }))]}
              hint={<>The value is read when a block runs and shown as <code>***</code>. Set secrets on the <Link to="/settings/secrets">Secrets</Link> page.</>} />
          ) : null}
          {needsName ? (
            <InputField label={authType === 'header' ? 'Header name' : 'Query parameter name'} value={authName} onChange={(e) => setAuthName(e.target.value)}
              placeholder={authType === 'header' ? 'X-API-Key' : 'api_key'} />
          ) : null}
        </div>
        <ErrorBanner error={secrets.error} />
      </fieldset>
      <ErrorBanner error={add.error} title="Not added" />
      <div className="row gap">
        <Button type="submit" variant="primary" busy={add.isPending} disabled={!ready}>Add connector</Button>
        {onCancel ? <Button onClick={onCancel}>Cancel</Button> : null}
      </div>
    </form>
  );
}

const METHOD_CLASS: Record<string, string> = { GET: 'badge-info', POST: 'badge-ok', PUT: 'badge-warn', PATCH: 'badge-warn', DELETE: 'badge-bad' };

const operationColumns: Column<ConnectorOperation>[] = [
  { key: 'method', header: 'Method', render: (o) => <span className={`badge ${METHOD_CLASS[o.method] ?? 'badge-neutral'} method-badge`}>{o.method}</span> },
  { key: 'path', header: 'Path', render: (o) => <code className="op-path">{o.path}</code> },
  { key: 'id', header: 'Operation', render: (o) => <code>{o.operationId}</code> },
  { key: 'summary', header: 'Summary', render: (o) => o.summary || <span className="muted">—</span> },
];

function authText(c: Connector): string {
  if (!c.auth) return 'no auth';
  const where = c.auth.type === 'bearer' ? 'bearer' : c.auth.type === 'basic' ? 'basic' : `${c.auth.type} ${c.auth.name ?? ''}`.trim();
  return `${where} · {{${c.auth.secret}}}`;
}

function ConnectorCard({ connector, canWrite, onDelete }: { connector: Connector; canWrite: boolean; onDelete(): void }) {
  const titleId = `connector-${connector.id}`;
  return (
    <section className="card stack connector-card" aria-labelledby={titleId}>
      <div className="row gap connector-head">
        <h3 id={titleId}>{connector.name}</h3>
        <span className="badge badge-neutral">{connector.operations.length} operation{connector.operations.length === 1 ? '' : 's'}</span>
        <div className="topbar-spacer" />
        {canWrite ? <Button size="sm" variant="danger" aria-label={`Delete ${connector.name}`} onClick={onDelete}>Delete</Button> : null}
      </div>
      <dl className="connector-meta">
        <div><dt>Base URL</dt><dd><code>{connector.baseUrl}</code></dd></div>
        <div><dt>Auth</dt><dd><code>{authText(connector)}</code></dd></div>
        <div><dt>Updated</dt><dd>{formatRelative(connector.updatedAt)}</dd></div>
      </dl>
      <Table
        caption={`Operations of ${connector.name}`}
        columns={operationColumns}
        rows={connector.operations}
        rowKey={(o) => o.operationId}
        empty={<p className="muted">The document describes no operations.</p>}
      />
    </section>
  );
}

export default function ConnectorsPage() {
  const { workspaceId, role, workspaces } = useSession();
  const qc = useQueryClient();
  const canWrite = roleAllows(role, 'write');
  const wsName = workspaces.find((w) => w.id === workspaceId)?.name ?? '';
  const [notice, setNotice] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Connector | null>(null);
  // The form is open while there is nothing to list; afterwards the list comes first and a button opens it.
  const [formOpen, setFormOpen] = useState(false);
  const connectors = useQuery({ queryKey: ['connectors', workspaceId], queryFn: () => listConnectors(workspaceId) });
  const empty = connectors.data?.length === 0;
  const showForm = canWrite && (formOpen || empty);
  const remove = useMutation({
    mutationFn: (c: Connector) => deleteConnector(c.id),
    onSuccess: (_r, c) => {
      setDeleting(null);
      setNotice(`Deleted ${c.name}. Workflows that call its operations fail at those blocks.`);
      void qc.invalidateQueries({ queryKey: ['connectors', workspaceId] });
    },
  });

  return (
    <div className="stack">
      <PageHeader
        title="Connectors"
        description={<>APIs described by OpenAPI, for workflows in <strong>{wsName}</strong>: each operation is a block in the editor's palette and can be an agent's tool.</>}
        actions={canWrite && !showForm && connectors.data ? <Button variant="primary" onClick={() => { setNotice(null); setFormOpen(true); }}>Add a connector</Button> : undefined}
      />
      {notice ? <div className="banner" role="status">{notice}</div> : null}
      {showForm ? (
        <AddConnectorForm
          onCancel={empty ? undefined : () => setFormOpen(false)}
          onAdded={(c) => {
            setNotice(`Added ${c.name} with ${c.operations.length} operation${c.operations.length === 1 ? '' : 's'}.`);
            setFormOpen(false);
            void qc.invalidateQueries({ queryKey: ['connectors', workspaceId] });
          }}
        />
      ) : null}
      <section className="stack" aria-labelledby="connectors-title">
        <h2 id="connectors-title">Connectors</h2>
        {connectors.isPending ? <Loading /> : null}
        <ErrorBanner error={connectors.error} onRetry={() => void connectors.refetch()} />
        {connectors.data && connectors.data.length === 0 ? <EmptyState title="No connectors yet">Add one above from its OpenAPI document.</EmptyState> : null}
        {connectors.data?.map((c) => (
          <ConnectorCard key={c.id} connector={c} canWrite={canWrite} onDelete={() => { remove.reset(); setDeleting(c); }} />
        ))}
      </section>
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete ${deleting?.name ?? ''}?`}
        message="Workflows whose blocks or agents call its operations fail there until it is added again (a new one has a new id)."
        confirmLabel="Delete connector"
        danger
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => deleting && remove.mutate(deleting)}
        onCancel={() => setDeleting(null)}
      />
    </div>
  );
}
