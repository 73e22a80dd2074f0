// The deployed versions of a workflow, newest first (GET /api/v1/workflows/{id}/versions, paged), each with
// when and by whom it was deployed, its size, and a button that makes it the active version (rollback).
import { useId, useState } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { listVersions, type WorkflowVersion } from '../api/workflows';
import { useSession } from '../session';
import { Button, ConfirmDialog, ErrorBanner, StatusBadge, formatDate } from '../ui';
import './versions.css';

interface VersionListProps {
  workflowId: string;
  /** The active version's number; null while not deployed (a rollback needs a deployed workflow). */
  activeVersion: number | null;
  canRollback: boolean;
  busy: boolean;
  onRollback(version: number): void;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export function VersionList({ workflowId, activeVersion, canRollback, busy, onRollback }: VersionListProps) {
  const headingId = useId();
  const { user } = useSession();
  const [confirm, setConfirm] = useState<WorkflowVersion | null>(null);
  const q = useInfiniteQuery({
    queryKey: ['workflow-versions', workflowId],
    queryFn: ({ pageParam }) => listVersions(workflowId, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor,
  });
  const rows = q.data?.pages.flatMap((p) => p.data) ?? [];
  const by = (v: WorkflowVersion) => (v.deployedBy === null ? 'a workspace key' : v.deployedBy === user.id ? 'you' : 'another member');
  const action = (v: WorkflowVersion) => (activeVersion !== null && v.version < activeVersion ? `Roll back to v${v.version}` : `Activate v${v.version}`);

  return (
    <section className="stack" aria-labelledby={headingId}>
      <h3 id={headingId}>Versions</h3>
      <p className="muted small">Every deploy is an immutable numbered version. Activating an earlier one rolls back what the API, webhooks and schedules run; the draft is not changed.</p>
      <ErrorBanner error={q.error} onRetry={() => void q.refetch()} />
      {q.isPending ? <p className="muted small">Loading versions…</p> : null}
      {q.data && rows.length === 0 ? <p className="muted small">No versions yet: the first deploy makes v1.</p> : null}
      {rows.length > 0 && activeVersion === null && canRollback ? <p className="muted small">Not deployed: deploy to make a version active again.</p> : null}
      {rows.length > 0 ? (
        <ol className="version-list" aria-label="Deployed versions, newest first">
          {rows.map((v) => (
            <li key={v.id} className={`version-row${v.isActive ? ' active' : ''}`} data-testid={`version-${v.version}`}>
              <div className="version-info">
                <div className="row gap">
                  <strong>v{v.version}</strong>
                  {v.isActive ? <StatusBadge status="active" label="Active" /> : null}
                </div>
                <div className="muted small">
                  {formatDate(v.createdAt)} by {by(v)} · {plural(v.blockCount, 'block')}, {plural(v.edgeCount, 'connection')}
                </div>
              </div>
              {canRollback && !v.isActive && activeVersion !== null ? (
                <Button size="sm" disabled={busy} onClick={() => setConfirm(v)}>{action(v)}</Button>
              ) : null}
            </li>
          ))}
        </ol>
      ) : null}
      {q.hasNextPage ? (
        <div><Button size="sm" busy={q.isFetchingNextPage} onClick={() => void q.fetchNextPage()}>Show older versions</Button></div>
      ) : null}
      <ConfirmDialog
        open={confirm !== null}
        title={confirm ? `Make v${confirm.version} the active version?` : ''}
        message={confirm ? `API runs, the webhook and the schedule use v${confirm.version} from now on (v${activeVersion ?? '?'} stays in the list). The draft on the canvas is not changed.` : ''}
        confirmLabel={confirm ? action(confirm) : 'Activate'}
        busy={busy}
        onConfirm={() => { if (confirm) onRollback(confirm.version); setConfirm(null); }}
        onCancel={() => setConfirm(null)}
      />
    </section>
  );
}
