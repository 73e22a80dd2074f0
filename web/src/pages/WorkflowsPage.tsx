// /workflows: the workspace's workflows with their deploy state, and a way to create one.
import { useState, type FormEvent } from 'react';
import { useInfiniteQuery, useMutation } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { createWorkflow, listWorkflows, type Definition, type WorkflowSummary } from '../api/workflows';
import { roleAllows, useSession } from '../session';
import { Button, Dialog, EmptyState, ErrorBanner, InputField, Loading, PageHeader, StatusBadge, Table, formatDate, formatRelative, type Column } from '../ui';

/** A new workflow starts with a start block that takes one text input. */
export const NEW_DEFINITION: Definition = {
  blocks: [{ id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'message', type: 'string' }] }, position: { x: 80, y: 160 } }],
  edges: [],
};

function DeployState({ w }: { w: WorkflowSummary }) {
  if (!w.isDeployed) return <StatusBadge status="draft" label="Not deployed" />;
  return <StatusBadge status="deployed" label={`Deployed v${w.version ?? '?'}`} />;
}

function CreateDialog({ open, onClose }: { open: boolean; onClose(): void }) {
  const { workspaceId } = useSession();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const m = useMutation({
    mutationFn: () => createWorkflow(workspaceId, name.trim(), { ...NEW_DEFINITION, name: name.trim() }),
    onSuccess: (w) => navigate(`/workflows/${w.id}`),
  });
  const submit = (e: FormEvent) => { e.preventDefault(); if (name.trim()) m.mutate(); };
  return (
    <Dialog open={open} title="New workflow" onClose={onClose}>
      <form className="stack" onSubmit={submit}>
        <InputField label="Workflow name" required maxLength={200} autoFocus value={name} onChange={(e) => setName(e.target.value)} />
        <ErrorBanner error={m.error} />
        <div className="dialog-footer">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" busy={m.isPending} disabled={!name.trim()}>Create and open</Button>
        </div>
      </form>
    </Dialog>
  );
}

export default function WorkflowsPage() {
  const { workspaceId, role } = useSession();
  const [creating, setCreating] = useState(false);
  const q = useInfiniteQuery({
    queryKey: ['workflows', workspaceId],
    queryFn: ({ pageParam }) => listWorkflows(workspaceId, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor,
  });
  const rows = q.data?.pages.flatMap((p) => p.data) ?? [];
  const canWrite = roleAllows(role, 'write');

  const columns: Column<WorkflowSummary>[] = [
    { key: 'name', header: 'Name', render: (w) => <Link to={`/workflows/${w.id}`}><strong>{w.name}</strong></Link> },
    { key: 'state', header: 'Deploy state', render: (w) => <DeployState w={w} /> },
    { key: 'triggers', header: 'Triggers', render: (w) => [w.webhookUrl ? 'webhook' : '', w.schedule ? (w.schedule.enabled ? 'schedule' : 'schedule (off)') : '', w.isDeployed ? 'API' : ''].filter(Boolean).join(', ') || '—' },
    { key: 'deployed', header: 'Deployed', render: (w) => <span title={formatDate(w.deployedAt)}>{w.deployedAt ? formatRelative(w.deployedAt) : '—'}</span> },
    { key: 'updated', header: 'Edited', render: (w) => <span title={formatDate(w.updatedAt)}>{formatRelative(w.updatedAt)}</span> },
  ];

  return (
    <div className="stack">
      <PageHeader
        title="Workflows"
        description="Graphs of blocks that run over the API, on a webhook or on a schedule."
        actions={canWrite ? <Button variant="primary" onClick={() => setCreating(true)}>New workflow</Button> : undefined}
      />
      {q.isPending ? <Loading /> : null}
      <ErrorBanner error={q.error} onRetry={() => void q.refetch()} />
      {q.data ? (
        <Table
          caption="Workflows"
          columns={columns}
          rows={rows}
          rowKey={(w) => w.id}
          empty={<EmptyState title="No workflows yet" action={canWrite ? <Button variant="primary" onClick={() => setCreating(true)}>Create your first workflow</Button> : undefined}>Build one on the canvas: a start block, a few steps, deploy, run.</EmptyState>}
        />
      ) : null}
      {q.hasNextPage ? <div><Button busy={q.isFetchingNextPage} onClick={() => void q.fetchNextPage()}>Load more</Button></div> : null}
      <CreateDialog open={creating} onClose={() => setCreating(false)} />
    </div>
  );
}
