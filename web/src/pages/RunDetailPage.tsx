// /runs/:executionId: one run as a timeline (a waterfall of its blocks) with each block's input, output,
// error and timing. A run that is still queued or running is polled until it ends.
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError } from '../api/client';
import { roleAllows, useSession } from '../session';
import { Button, ConfirmDialog, CopyButton, EmptyState, ErrorBanner, Loading, PageHeader, StatusBadge, formatDate, formatDuration } from '../ui';
import { getLog, isLive, workflowNames, type LogDetail } from './runs/api';
import { formatUsd, prettyValue } from './runs/format';
import { RunCostBreakdown } from './runs/RunCostBreakdown';
import { Waterfall } from './runs/Waterfall';
import './runs/runs.css';

/** Elapsed time of a running run, ticking once a second. */
function useNow(active: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    const t = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(t);
  }, [active]);
  return now;
}

function Summary({ run, workflowName }: { run: LogDetail; workflowName: string }) {
  return (
    <dl className="run-summary">
      <div><dt>Workflow</dt><dd><Link to={`/workflows/${encodeURIComponent(run.workflowId)}`}>{workflowName}</Link></dd></div>
      <div><dt>Execution id</dt><dd className="mono small">{run.executionId} <CopyButton text={run.executionId} label="Copy id" /></dd></div>
      <div><dt>Trigger</dt><dd>{run.trigger} <span className="muted">({run.mode})</span></dd></div>
      <div><dt>Started</dt><dd>{formatDate(run.startedAt)}</dd></div>
      <div><dt>Ended</dt><dd>{formatDate(run.endedAt)}</dd></div>
      <div><dt>Duration</dt><dd>{formatDuration(run.totalDurationMs)}</dd></div>
      <div><dt>Cost</dt><dd>{formatUsd(run.costUsd)}</dd></div>
      <div><dt>Blocks run</dt><dd>{run.trace.length}</dd></div>
    </dl>
  );
}

export default function RunDetailPage() {
  const { executionId = '' } = useParams();
  const { workspaceId, role } = useSession();
  const qc = useQueryClient();
  const [confirmCancel, setConfirmCancel] = useState(false);

  const run = useQuery({
    queryKey: ['log', workspaceId, executionId],
    queryFn: () => getLog(executionId),
    // Poll a run that is still moving; stop once it has ended.
    refetchInterval: (q) => (q.state.data && (isLive(q.state.data.status)) ? 1000 : false),
  });
  const data = run.data;
  const live = Boolean(data && isLive(data.status));
  const now = useNow(live);
  const names = useQuery({ queryKey: ['workflow-names', workspaceId], queryFn: () => workflowNames(workspaceId), enabled: Boolean(workspaceId), staleTime: 60_000 });
  const cancel = useMutation({
    mutationFn: () => api('/api/v2/workflows/{id}/runs/{runId}/cancel', { method: 'post', params: { id: data?.workflowId ?? '', runId: executionId } }),
    onSuccess: async () => {
      setConfirmCancel(false);
      await qc.invalidateQueries({ queryKey: ['log', workspaceId, executionId] });
    },
  });

  if (run.isLoading) return <Loading label="Loading the run…" />;
  if (run.error || !data) {
    const missing = run.error instanceof ApiError && run.error.status === 404;
    return (
      <div className="stack">
        <PageHeader title="Run" back={{ to: '/runs', label: 'Runs' }} />
        {missing ? <EmptyState title="Run not found">No run with id <code>{executionId}</code> in your workspaces.</EmptyState>
          : <ErrorBanner error={run.error} onRetry={() => void run.refetch()} />}
      </div>
    );
  }

  const workflowName = names.data?.get(data.workflowId) ?? data.workflowId;
  const endMs = data.endedAt ? Date.parse(data.endedAt) : null;
  const canCancel = roleAllows(role, 'write') && (live || data.status === 'paused');
  return (
    <div className="stack">
      <PageHeader
        back={{ to: '/runs', label: 'Runs' }}
        title={<>{workflowName} <StatusBadge status={data.status === 'processing' ? 'running' : data.status} /></>}
        description={live
          ? <span className="run-live" role="status"><span className="run-live__dot" aria-hidden="true" />Live: {data.status === 'queued' ? 'waiting in the queue' : `running for ${formatDuration(now - Date.parse(data.startedAt))}`}</span>
          : `Run ${data.executionId}`}
        actions={<>
          {data.status === 'paused' ? <Link className="btn btn-primary" to={`/approvals#${encodeURIComponent(data.executionId)}`}>Answer the approval</Link> : null}
          {canCancel ? <Button variant="danger" onClick={() => setConfirmCancel(true)}>Cancel run</Button> : null}
        </>}
      />
      {data.error ? (
        <div className="banner banner-error" role="alert">
          <div><strong>Failed{data.errorBlockId ? ` in block ${data.errorBlockId}` : ''}: </strong>{data.error}</div>
        </div>
      ) : null}
      <section className="card" aria-labelledby="run-summary-h">
        <h2 id="run-summary-h" className="sr-only">Summary</h2>
        <Summary run={data} workflowName={workflowName} />
      </section>
      {data.cost ? (
        <section className="card stack" aria-labelledby="run-cost-h">
          <h2 id="run-cost-h">Cost</h2>
          <RunCostBreakdown cost={data.cost} />
        </section>
      ) : null}
      <section className="card stack" aria-labelledby="run-timeline-h">
        <h2 id="run-timeline-h">Timeline</h2>
        {data.trace.length === 0 ? (
          <p className="muted">{live ? 'Blocks appear here as the run records them.' : 'This run recorded no blocks.'}</p>
        ) : (
          <>
            {live ? <p className="muted small">Blocks appear as they finish. Until the run ends, each block's start is estimated from the end of the block before it.</p> : null}
            <Waterfall trace={data.trace} runStart={data.startedAt} runEndMs={endMs} nowMs={live ? now : undefined} />
          </>
        )}
      </section>
      <div className="grid-2 run-io">
        <section className="card" aria-labelledby="run-input-h">
          <h2 id="run-input-h">Input</h2>
          <pre>{prettyValue(data.input ?? {})}</pre>
        </section>
        <section className="card" aria-labelledby="run-output-h">
          <h2 id="run-output-h">Output</h2>
          {data.output === null || data.output === undefined ? <p className="muted">{live ? 'Not finished yet.' : 'No output.'}</p> : <pre>{prettyValue(data.output)}</pre>}
        </section>
      </div>
      <ConfirmDialog
        open={confirmCancel}
        title="Cancel this run?"
        message="Its current block is stopped and the run ends as cancelled. A paused run's approval is withdrawn."
        confirmLabel="Cancel run"
        danger
        busy={cancel.isPending}
        error={cancel.error}
        onConfirm={() => cancel.mutate()}
        onCancel={() => setConfirmCancel(false)}
      />
    </div>
  );
}
