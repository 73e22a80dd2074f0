// /runs: the workspace's recent runs, newest first, with filters kept in the URL (so a filtered list can
// be shared) and cursor paging through GET /api/v1/logs.
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useSession } from '../session';
import { Button, EmptyState, ErrorBanner, Loading, PageHeader, SelectField, InputField, StatusBadge, Table, formatDate, formatDuration, formatRelative } from '../ui';
import { isLive, listLogs, RUN_STATUSES, TRIGGERS, workflowNames, type LogFilters, type LogRecord } from './runs/api';
import { formatUsd } from './runs/format';
import './runs/runs.css';

const PAGE_SIZE = 25;
const FILTER_KEYS = ['status', 'trigger', 'workflowId', 'from', 'to'] as const;

/** A date input's day as the start (or the end) of that local day, in ISO 8601 for the API. */
function dayBound(day: string | null, end: boolean): string | undefined {
  if (!day) return undefined;
  const d = new Date(`${day}T00:00:00`);
  if (Number.isNaN(d.getTime())) return undefined;
  if (end) d.setDate(d.getDate() + 1);
  return new Date(d.getTime() - (end ? 1 : 0)).toISOString();
}

export default function RunsPage() {
  const { workspaceId } = useSession();
  const [params, setParams] = useSearchParams();
  // Cursors of the pages before the current one: "Newer" pops, "Older" pushes.
  const [cursors, setCursors] = useState<(string | undefined)[]>([]);
  const [cursor, setCursor] = useState<string | undefined>(undefined);

  const filters: LogFilters = {
    status: params.get('status') ?? undefined,
    trigger: params.get('trigger') ?? undefined,
    workflowId: params.get('workflowId') ?? undefined,
    startDate: dayBound(params.get('from'), false),
    endDate: dayBound(params.get('to'), true),
  };
  const setFilter = (key: (typeof FILTER_KEYS)[number], value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
    setCursors([]);
    setCursor(undefined);
  };
  const anyFilter = FILTER_KEYS.some((k) => params.get(k));

  const names = useQuery({ queryKey: ['workflow-names', workspaceId], queryFn: () => workflowNames(workspaceId), enabled: Boolean(workspaceId), staleTime: 60_000 });
  const logs = useQuery({
    queryKey: ['logs', workspaceId, filters, cursor],
    queryFn: () => listLogs(workspaceId, filters, cursor, PAGE_SIZE),
    enabled: Boolean(workspaceId),
    placeholderData: keepPreviousData,
    // Runs still queued or running change by themselves: refresh the page while any is shown.
    refetchInterval: (q) => (q.state.data?.data.some((r) => isLive(r.status)) ? 3000 : false),
  });

  const nameOf = (id: string) => names.data?.get(id) ?? `${id.slice(0, 8)}…`;
  const workflowOptions = [{ value: '', label: 'All workflows' }, ...[...(names.data ?? new Map<string, string>())].map(([value, label]) => ({ value, label }))];
  const rows = logs.data?.data ?? [];
  const page = cursors.length + 1;

  return (
    <div className="stack">
      <PageHeader
        title="Runs"
        description="Every run of the workspace's workflows, newest first. Open one to see its timeline."
        actions={<Button onClick={() => void logs.refetch()} busy={logs.isFetching && !logs.isLoading}>Refresh</Button>}
      />
      <form className="runs-filters card" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <SelectField label="Status" value={params.get('status') ?? ''} onChange={(e) => setFilter('status', e.target.value)}
          options={[{ value: '', label: 'Any status' }, ...RUN_STATUSES.map((s) => ({ value: s, label: s }))]} />
        <SelectField label="Trigger" value={params.get('trigger') ?? ''} onChange={(e) => setFilter('trigger', e.target.value)}
          options={[{ value: '', label: 'Any trigger' }, ...TRIGGERS.map((t) => ({ value: t, label: t }))]} />
        <SelectField label="Workflow" value={params.get('workflowId') ?? ''} onChange={(e) => setFilter('workflowId', e.target.value)} options={workflowOptions} />
        <InputField label="From" type="date" value={params.get('from') ?? ''} onChange={(e) => setFilter('from', e.target.value)} />
        <InputField label="To" type="date" value={params.get('to') ?? ''} onChange={(e) => setFilter('to', e.target.value)} />
        <div className="runs-filters__clear">
          <Button variant="ghost" disabled={!anyFilter} onClick={() => { setParams(new URLSearchParams(), { replace: true }); setCursors([]); setCursor(undefined); }}>
            Clear filters
          </Button>
        </div>
      </form>

      <ErrorBanner error={logs.error} onRetry={() => void logs.refetch()} />
      {logs.isLoading ? <Loading label="Loading runs…" /> : (
        <Table<LogRecord>
          caption="Runs"
          rows={rows}
          rowKey={(r) => r.id}
          empty={<EmptyState title={anyFilter ? 'No run matches these filters' : 'No runs yet'}>
            {anyFilter ? 'Change or clear the filters.' : 'Runs appear here once a workflow is executed through the API, a webhook, a schedule or the editor.'}
          </EmptyState>}
          columns={[
            { key: 'status', header: 'Status', render: (r) => <StatusBadge status={r.status === 'processing' ? 'running' : r.status} /> },
            {
              key: 'workflow', header: 'Run', render: (r) => (
                <div className="runs-cell-run">
                  <Link to={`/runs/${encodeURIComponent(r.executionId)}`}>{nameOf(r.workflowId)}</Link>
                  <span className="mono muted small">{r.executionId.slice(0, 8)}</span>
                </div>
              ),
            },
            { key: 'trigger', header: 'Trigger', render: (r) => <>{r.trigger}<span className="muted small"> · {r.mode}</span></> },
            { key: 'started', header: 'Started', render: (r) => <time dateTime={r.startedAt} title={formatDate(r.startedAt)}>{formatRelative(r.startedAt)}</time> },
            { key: 'duration', header: 'Duration', className: 'num', render: (r) => (isLive(r.status) ? <span className="muted">running…</span> : formatDuration(r.totalDurationMs)) },
            { key: 'cost', header: 'Cost', className: 'num', render: (r) => formatUsd(r.costUsd) },
            { key: 'error', header: 'Error', className: 'runs-cell-error', render: (r) => (r.error ? <span title={r.error}>{r.error}</span> : null) },
          ]}
        />
      )}

      <nav className="row gap runs-pager" aria-label="Pages of runs">
        <Button disabled={cursors.length === 0 || logs.isFetching} onClick={() => { const prev = cursors.slice(0, -1); setCursor(cursors[cursors.length - 1]); setCursors(prev); }}>
          ← Newer
        </Button>
        <span className="muted small" aria-live="polite">Page {page}</span>
        <Button disabled={!logs.data?.nextCursor || logs.isFetching} onClick={() => { setCursors([...cursors, cursor]); setCursor(logs.data?.nextCursor); }}>
          Older →
        </Button>
      </nav>
    </div>
  );
}
