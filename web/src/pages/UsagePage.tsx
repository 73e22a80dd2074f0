// /usage: rate limits, the billing period's cost with a chart of cost per day, storage, and the AI
// credit balance with its ledger, all of one billed account: the workspace's own account for an admin
// of the current workspace (who may switch to their own), else the signed-in user's.
import { useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useSession } from '../session';
import { Button, ErrorBanner, Loading, PageHeader, Table, formatDate } from '../ui';
import { formatBytes, formatUsd } from './runs/format';
import { CostChart } from './usage/CostChart';
import { credits, dailyUsage, ledger, usageLimits, type AccountView, type Bucket, type LedgerEntry } from './usage/api';
import './usage/usage.css';

/** A meter; `goodWhenHigh` for what is better full (tokens left), else fuller is worse (money, storage spent). */
function Meter({ label, value, max, text, goodWhenHigh }: { label: string; value: number; max: number; text: string; goodWhenHigh?: boolean }) {
  const pct = max > 0 ? Math.min(100, (value / max) * 100) : 0;
  const top = max || 1;
  const zones = goodWhenHigh ? { low: top * 0.2, optimum: top } : { high: top * 0.8, optimum: 0 };
  return (
    <div className="usage-meter">
      <div className="usage-meter__label"><span>{label}</span><span>{text}</span></div>
      <meter min={0} max={top} value={Math.min(value, top)} {...zones} aria-label={`${label}: ${text}`} />
      <span className="sr-only">{pct.toFixed(0)} percent</span>
    </div>
  );
}

function BucketCard({ name, b }: { name: string; b: Bucket }) {
  return (
    <div className="usage-bucket">
      <h3>{name}</h3>
      <Meter label="Remaining now" value={b.remaining} max={b.limit} text={`${b.remaining} of ${b.limit}`} goodWhenHigh />
      <p className="muted small">{b.requestsPerMinute} runs a minute, bursts up to {b.maxBurst}. {b.isLimited ? 'Limited now; ' : ''}Full again by {formatDate(b.resetAt)}.</p>
    </div>
  );
}

interface Paging { view: string; cursors: (string | undefined)[]; cursor: string | undefined }

export default function UsagePage() {
  const { workspaceId, workspaces, role } = useSession();
  // Admins see the workspace's own account by default (the server refuses it to other roles).
  const [ownAccount, setOwnAccount] = useState(false);
  const isAdmin = role === 'admin' && Boolean(workspaceId);
  const showWorkspace = isAdmin && !ownAccount;
  const view: AccountView = showWorkspace ? { workspaceId } : {};
  const viewKey = showWorkspace ? `workspace:${workspaceId}` : 'own';
  const workspaceName = workspaces.find((w) => w.id === workspaceId)?.name ?? workspaceId;

  // Ledger cursors belong to one account: another view starts at its first page.
  const [paging, setPaging] = useState<Paging>({ view: viewKey, cursors: [], cursor: undefined });
  const { cursors, cursor } = paging.view === viewKey ? paging : { cursors: [], cursor: undefined };
  const setPage = (nextCursors: (string | undefined)[], nextCursor: string | undefined) => setPaging({ view: viewKey, cursors: nextCursors, cursor: nextCursor });

  const limits = useQuery({ queryKey: ['usage-limits', viewKey], queryFn: () => usageLimits(view), refetchInterval: 30_000 });
  const balance = useQuery({ queryKey: ['credits', viewKey], queryFn: () => credits(view) });
  const daily = useQuery({
    queryKey: ['usage-daily', viewKey, workspaceId],
    queryFn: () => dailyUsage(workspaceId, 30, showWorkspace),
    enabled: Boolean(workspaceId),
  });
  const entries = useQuery({ queryKey: ['ledger', viewKey, cursor], queryFn: () => ledger(view, cursor, 20), placeholderData: keepPreviousData });

  const u = limits.data;
  const account = showWorkspace ? `workspace:${workspaceId}` : balance.data?.account;
  return (
    <div className="stack">
      <PageHeader
        title="Usage"
        description="Limits, costs and credits of one billed account."
        actions={isAdmin ? (
          <Button onClick={() => setOwnAccount(!ownAccount)}>{showWorkspace ? 'Show my own account' : 'Show the workspace\'s account'}</Button>
        ) : undefined}
      />
      <p className="usage-account" role="status">
        {showWorkspace
          ? <>Showing the account of the workspace <strong>{workspaceName}</strong> (<code>{account}</code>): runs with the workspace's API keys are charged to it. You see it as an admin of the workspace.</>
          : <>Showing your own account{account ? <> (<code>{account}</code>)</> : null}: runs with your personal API keys and from this dashboard are charged to it.</>}
      </p>
      <ErrorBanner error={limits.error} onRetry={() => void limits.refetch()} />
      {limits.isLoading ? <Loading label="Loading usage…" /> : u ? (
        <div className="usage-grid">
          <section className="card stack" aria-labelledby="usage-cost-h">
            <h2 id="usage-cost-h">This billing period</h2>
            <p className="usage-big">{formatUsd(u.usage.currentPeriodCost)} <span className="muted small">of {formatUsd(u.usage.limit)} on the {u.usage.plan} plan</span></p>
            <Meter label="Cost so far" value={u.usage.currentPeriodCost} max={u.usage.limit} text={`${((u.usage.currentPeriodCost / (u.usage.limit || 1)) * 100).toFixed(1)}%`} />
            {u.usage.isExceeded ? <div className="banner banner-error" role="alert"><div>The period's limit is reached: new runs are refused (402) until the next period or a plan change.</div></div> : null}
          </section>
          <section className="card stack" aria-labelledby="usage-storage-h">
            <h2 id="usage-storage-h">Storage</h2>
            <p className="usage-big">{formatBytes(u.storage.usedBytes)} <span className="muted small">of {formatBytes(u.storage.limitBytes)}</span></p>
            <Meter label="Tables, documents and uploaded files" value={u.storage.usedBytes} max={u.storage.limitBytes} text={`${u.storage.percentUsed.toFixed(2)}%`} />
          </section>
          <section className="card stack" aria-labelledby="usage-credits-h">
            <h2 id="usage-credits-h">AI credits</h2>
            <ErrorBanner error={balance.error} />
            {balance.data ? <>
              <p className="usage-big">{formatUsd(balance.data.balanceUsd)}</p>
              <p className="muted small">{formatUsd(balance.data.reservedUsd)} reserved for calls in flight · updated {formatDate(balance.data.updatedAt)}</p>
            </> : <Loading />}
          </section>
        </div>
      ) : null}

      <section className="card stack" aria-labelledby="usage-daily-h">
        <h2 id="usage-daily-h">Cost per day</h2>
        <ErrorBanner error={daily.error} onRetry={() => void daily.refetch()} />
        {daily.data ? (
          <CostChart days={daily.data.data}
            caption={`Cost per day over the last 30 days (UTC) of ${daily.data.account}: run base charges and AI model usage.`} />
        ) : daily.isLoading && workspaceId ? <Loading label="Loading daily cost…" /> : null}
      </section>

      {u ? (
        <section className="card stack" aria-labelledby="usage-rates-h">
          <h2 id="usage-rates-h">Rate limits</h2>
          <div className="grid-2">
            <BucketCard name="Synchronous runs" b={u.rateLimit.sync} />
            <BucketCard name="Asynchronous runs" b={u.rateLimit.async} />
          </div>
        </section>
      ) : null}

      <section className="stack" aria-labelledby="usage-ledger-h">
        <h2 id="usage-ledger-h">Credit ledger</h2>
        <ErrorBanner error={entries.error} onRetry={() => void entries.refetch()} />
        {entries.isLoading ? <Loading label="Loading the ledger…" /> : (
          <Table<LedgerEntry>
            caption="Credit ledger, newest first"
            rows={entries.data?.data ?? []}
            rowKey={(e) => e.id}
            empty={<p className="muted">No credit movements yet. Credits are granted with <code>weft credits grant</code>.</p>}
            columns={[
              { key: 'when', header: 'When', render: (e) => formatDate(e.createdAt) },
              { key: 'kind', header: 'Kind', render: (e) => e.kind },
              { key: 'amount', header: 'Amount', className: 'num', render: (e) => <span className={e.amountUsd < 0 ? 'usage-neg' : undefined}>{formatUsd(e.amountUsd)}</span> },
              { key: 'cost', header: 'Cost', className: 'num', render: (e) => formatUsd(e.costUsd) },
              { key: 'balance', header: 'Balance after', className: 'num', render: (e) => formatUsd(e.balanceAfterUsd) },
              { key: 'model', header: 'Model', render: (e) => e.model ?? '' },
              { key: 'note', header: 'Note', render: (e) => <span className="muted small">{e.note ?? ''}</span> },
            ]}
          />
        )}
        {cursors.length > 0 || entries.data?.nextCursor ? (
          <nav className="row gap usage-pager" aria-label="Pages of the ledger">
            <Button disabled={cursors.length === 0 || entries.isFetching} onClick={() => setPage(cursors.slice(0, -1), cursors[cursors.length - 1])}>← Newer</Button>
            <Button disabled={!entries.data?.nextCursor || entries.isFetching} onClick={() => setPage([...cursors, cursor], entries.data?.nextCursor)}>Older →</Button>
          </nav>
        ) : null}
      </section>
    </div>
  );
}
