// /: a short overview of the workspace: runs of the last day, workflows, recent runs, links onwards.
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../api/client';
import { listWorkflows } from '../api/workflows';
import { roleAllows, useSession } from '../session';
import { ErrorBanner, Loading, PageHeader, StatusBadge, formatDuration, formatRelative } from '../ui';
import type { LogPage } from './runs/api';

const DAY_MS = 24 * 3600 * 1000;

function Stat({ label, value, to, sub }: { label: string; value: string; to: string; sub?: string }) {
  return (
    <Link to={to} className="card stat-card">
      <div className="muted small">{label}</div>
      <div className="stat">{value}</div>
      {sub ? <div className="muted small">{sub}</div> : null}
    </Link>
  );
}

export default function HomePage() {
  const { workspaceId, workspaces, user, role } = useSession();
  const wsName = workspaces.find((w) => w.id === workspaceId)?.name ?? '';
  // "the last day" is computed when the query runs, so the key stays stable while the page is open
  const runs = useQuery({
    queryKey: ['home-runs', workspaceId],
    queryFn: () => api('/api/v1/logs', { query: { workspaceId, startDate: new Date(Date.now() - DAY_MS).toISOString(), limit: 200 } }),
  });
  const paused = useQuery({
    queryKey: ['home-paused', workspaceId],
    queryFn: () => api('/api/v1/logs', { query: { workspaceId, status: 'paused', limit: 100 } }),
  });
  const workflows = useQuery({ queryKey: ['workflows-first', workspaceId], queryFn: () => listWorkflows(workspaceId) });

  const runList = runs.data?.data ?? [];
  const more = (p?: LogPage | { nextCursor?: string }) => (p?.nextCursor ? '+' : '');
  const failed = runList.filter((r) => r.status === 'failed').length;
  const wfList = workflows.data?.data ?? [];
  const names = new Map(wfList.map((w) => [w.id, w.name]));

  return (
    <div className="stack">
      <PageHeader title={`Welcome, ${user.name || user.email}`} description={<>Workspace <strong>{wsName}</strong> · your role: {role}</>} />
      <ErrorBanner error={runs.error ?? workflows.error ?? paused.error} />
      {runs.isPending || workflows.isPending ? <Loading /> : null}
      <div className="grid-stats">
        <Stat label="Runs in the last 24 h" value={runs.data ? `${runList.length}${more(runs.data)}` : '…'} to="/runs" sub={runs.data ? `${failed} failed` : undefined} />
        <Stat label="Waiting for approval" value={paused.data ? `${paused.data.data.length}${more(paused.data)}` : '…'} to="/approvals" />
        <Stat label="Workflows" value={workflows.data ? `${wfList.length}${more(workflows.data)}` : '…'} to="/workflows" sub={workflows.data ? `${wfList.filter((w) => w.isDeployed).length} deployed` : undefined} />
      </div>
      <div className="grid-2">
        <section className="card stack" aria-labelledby="recent-runs">
          <h2 id="recent-runs">Recent runs</h2>
          {runs.data && runList.length === 0 ? <p className="muted">No runs in the last day.</p> : null}
          <ul className="link-list">
            {runList.slice(0, 6).map((r) => (
              <li key={r.id} className="row gap">
                <StatusBadge status={r.status} />
                <Link to={`/runs/${r.executionId}`}>{names.get(r.workflowId) ?? 'Workflow'}</Link>
                <span className="muted small">{r.trigger} · {formatRelative(r.createdAt)} · {formatDuration(r.totalDurationMs)}</span>
              </li>
            ))}
          </ul>
          <Link to="/runs">All runs</Link>
        </section>
        <section className="card stack" aria-labelledby="next-steps">
          <h2 id="next-steps">Get going</h2>
          <ul className="link-list">
            {roleAllows(role, 'write') ? <li><Link to="/workflows">Build a workflow</Link> <span className="muted small">on the canvas, then deploy and run it</span></li> : null}
            <li><Link to="/settings/api-keys">Create an API key</Link> <span className="muted small">to call workflows from your code</span></li>
            <li><Link to="/tables">Tables</Link> and <Link to="/knowledge">knowledge bases</Link> <span className="muted small">your workflows read and write</span></li>
            <li><Link to="/usage">Usage and limits</Link></li>
            <li><a href="/api/docs">API reference</a> <span className="muted small">(every route the dashboard uses)</span></li>
          </ul>
        </section>
      </div>
    </div>
  );
}
