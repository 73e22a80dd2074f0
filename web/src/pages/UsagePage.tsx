// /usage: rate limits, the billing period's cost with a chart of cost per day, storage, and the AI
// credit balance with its ledger, all of the caller's billed account.
import { useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Button, ErrorBanner, Loading, PageHeader, Table, formatDate } from '../ui';
import { formatBytes, formatUsd } from './runs/format';
import { CostChart } from './usage/CostChart';
import { credits, dailyCost, ledger, usageLimits, type Bucket, type LedgerEntry } from './usage/api';
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

export default function UsagePage() {
  const [cursors, setCursors] = useState<(string | undefined)[]>([]);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const limits = useQuery({ queryKey: ['usage-limits'], queryFn: usageLimits, refetchInterval: 30_000 });
  const balance = useQuery({ queryKey: ['credits'], queryFn: credits });
  const daily = useQuery({ queryKey: ['usage-daily'], queryFn: () => dailyCost(30) });
  const entries = useQuery({ queryKey: ['ledger', cursor], queryFn: () => ledger(cursor, 20), placeholderData: keepPreviousData });

  const u = limits.data;
  return (
    <div className="stack">
      <PageHeader title="Usage" description={balance.data ? `Limits, costs and credits of the billed account ${balance.data.account}.` : 'Limits, costs and credits of your billed account.'} />
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
          <CostChart days={daily.data.days}
            caption="AI credit spent per day over the last 30 days (UTC), from the credit ledger. Run base charges are in the period's cost above, not in this series." />
        ) : daily.isLoading ? <Loading label="Loading daily cost…" /> : null}
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
            <Button disabled={cursors.length === 0 || entries.isFetching} onClick={() => { setCursor(cursors[cursors.length - 1]); setCursors(cursors.slice(0, -1)); }}>← Newer</Button>
            <Button disabled={!entries.data?.nextCursor || entries.isFetching} onClick={() => { setCursors([...cursors, cursor]); setCursor(entries.data?.nextCursor); }}>Older →</Button>
          </nav>
        ) : null}
      </section>
    </div>
  );
}
