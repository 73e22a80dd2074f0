// /knowledge: the workspace's knowledge bases, and creating one.
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSession } from '../../session';
import { Button, Dialog, EmptyState, ErrorBanner, InputField, Loading, PageHeader, Table, TextAreaField, formatDate } from '../../ui';
import { createBase, listBases, type KnowledgeBase } from './api';

function NewBaseDialog({ onClose, onCreated }: { onClose(): void; onCreated(kb: KnowledgeBase): void }) {
  const { workspaceId } = useSession();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [nameError, setNameError] = useState<string | undefined>();
  const create = useMutation({ mutationFn: () => createBase(workspaceId, name.trim(), description.trim()), onSuccess: onCreated });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return setNameError('A name is required');
    setNameError(undefined);
    create.mutate();
  };
  return (
    <Dialog open title="New knowledge base" onClose={onClose}>
      <form className="stack" onSubmit={submit} noValidate>
        <InputField label="Name" value={name} onChange={(e) => setName(e.target.value)} error={nameError} maxLength={255} autoComplete="off" />
        <TextAreaField label="Description" hint="Optional" value={description} onChange={(e) => setDescription(e.target.value)} rows={3} />
        <ErrorBanner error={create.error} />
        <div className="dialog-footer">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" busy={create.isPending}>Create</Button>
        </div>
      </form>
    </Dialog>
  );
}

export function BaseList() {
  const { workspaceId } = useSession();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [creating, setCreating] = useState(false);
  const bases = useQuery({ queryKey: ['knowledge-bases', workspaceId], queryFn: () => listBases(workspaceId), enabled: Boolean(workspaceId) });
  return (
    <div className="stack">
      <PageHeader title="Knowledge" description="Documents, split into chunks and embedded, that workflows search by meaning."
        actions={<Button variant="primary" onClick={() => setCreating(true)}>New knowledge base</Button>} />
      <ErrorBanner error={bases.error} onRetry={() => void bases.refetch()} />
      {bases.isLoading ? <Loading label="Loading knowledge bases…" /> : (
        <Table<KnowledgeBase>
          caption="Knowledge bases"
          rows={bases.data ?? []}
          rowKey={(b) => b.id}
          empty={<EmptyState title="No knowledge bases yet" action={<Button variant="primary" onClick={() => setCreating(true)}>New knowledge base</Button>}>
            Create one, then upload documents into it.
          </EmptyState>}
          columns={[
            { key: 'name', header: 'Name', render: (b) => <Link to={`/knowledge/${encodeURIComponent(b.id)}`}>{b.name}</Link> },
            { key: 'docs', header: 'Documents', className: 'num', render: (b) => b.docCount.toLocaleString() },
            { key: 'tokens', header: 'Tokens', className: 'num', render: (b) => b.tokenCount.toLocaleString() },
            { key: 'model', header: 'Embedding model', render: (b) => <span className="small">{b.embeddingModel} <span className="muted">({b.embeddingDimension}-d)</span></span> },
            { key: 'updated', header: 'Updated', render: (b) => formatDate(b.updatedAt) },
          ]}
        />
      )}
      {creating ? (
        <NewBaseDialog onClose={() => setCreating(false)} onCreated={(kb) => {
          setCreating(false);
          void qc.invalidateQueries({ queryKey: ['knowledge-bases', workspaceId] });
          navigate(`/knowledge/${encodeURIComponent(kb.id)}`);
        }} />
      ) : null}
    </div>
  );
}
