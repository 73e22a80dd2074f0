// /approvals: runs paused at a human block, each with the form to answer it. The list is the logs API
// filtered to paused runs; each run's pause points come from GET /api/resume/{workflowId}/{executionId}.
import { useEffect, useState } from 'react';
import { Link, useLocation } from 'react-router';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { roleAllows, useSession } from '../session';
import { Button, EmptyState, ErrorBanner, Loading, PageHeader, formatDate, formatRelative } from '../ui';
import { AnswerOutcome, ApprovalForm } from './approvals/ApprovalForm';
import { listApprovals, runInput, type Approval, type PausePoint, type ResumeAnswer } from './approvals/api';
import { workflowNames } from './runs/api';
import { prettyValue } from './runs/format';
import './approvals/approvals.css';

function scopeText(p: PausePoint): string | null {
  if (p.loopScope) return `loop ${p.loopScope.loopId}, iteration ${p.loopScope.iteration + 1}`;
  if (p.parallelScope) return `parallel ${p.parallelScope.parallelId}, branch ${p.parallelScope.branchIndex + 1} of ${p.parallelScope.branchTotal}`;
  return null;
}

type Answers = Record<string, ResumeAnswer>;
const answerKey = (executionId: string, contextId: string) => `${executionId}\u0000${contextId}`;

/** When an unanswered pause times out, and what happens then. */
function deadline(p: PausePoint): string | null {
  const secs = p.response?.data?.timeoutSeconds;
  if (!secs) return null;
  const at = new Date(Date.parse(p.registeredAt) + secs * 1000).toISOString();
  return `without an answer it ${p.response?.data?.onTimeout === 'approve' ? 'continues as approved' : 'fails'} at ${formatDate(at)}`;
}

function InputSummary({ input }: { input: Record<string, unknown> }) {
  const entries = Object.entries(input);
  if (entries.length === 0) return null;
  return (
    <dl className="approval__input" aria-label="Run input">
      {entries.map(([k, v]) => (
        <div key={k}><dt>{k}</dt><dd>{typeof v === 'string' ? v : <code>{prettyValue(v)}</code>}</dd></div>
      ))}
    </dl>
  );
}

function ApprovalCard({ item, workflowName, answers, onAnswered }: {
  item: Approval; workflowName: string; answers: Answers; onAnswered(contextId: string, answer: ResumeAnswer): void;
}) {
  const { log, paused } = item;
  const points = paused.pausePoints;
  const waiting = points.filter((p) => p.resumeStatus === 'paused');
  const input = runInput(paused);
  return (
    <article className="card approval" id={log.executionId} aria-labelledby={`h-${log.executionId}`}>
      <header className="approval__head">
        <h2 id={`h-${log.executionId}`}>{workflowName}</h2>
        <p className="muted small">
          Paused <time dateTime={paused.pausedAt} title={formatDate(paused.pausedAt)}>{formatRelative(paused.pausedAt)}</time>
          {' · '}<Link to={`/runs/${encodeURIComponent(log.executionId)}`}>run {log.executionId.slice(0, 8)}</Link>
          {' · '}{log.trigger}
        </p>
      </header>
      {input ? <InputSummary input={input} /> : null}
      {waiting.length === 0 && !points.some((p) => answers[answerKey(log.executionId, p.contextId)]) ? <p className="muted">Every approval of this run has been answered; it is continuing.</p> : null}
      {points.map((p) => {
        const scope = scopeText(p);
        const answer = answers[answerKey(log.executionId, p.contextId)];
        return (
          <section key={p.contextId} className="approval__point" aria-label={`Approval ${p.blockId}`}>
            <h3>{p.response?.data?.message || `Block ${p.blockId} is waiting for an answer`}</h3>
            <p className="muted small">
              Block <code>{p.blockId}</code>{scope ? ` · ${scope}` : ''}{deadline(p) ? ` · ${deadline(p)}` : ''}
            </p>
            {answer ? <AnswerOutcome answer={answer} executionId={log.executionId} />
              : p.resumeStatus === 'paused'
              ? <ApprovalForm workflowId={log.workflowId} executionId={log.executionId} point={p} onAnswered={(a) => onAnswered(p.contextId, a)} />
              : <p className="muted">Status: {p.resumeStatus}{p.queuePosition ? ` (position ${p.queuePosition})` : ''}</p>}
          </section>
        );
      })}
    </article>
  );
}

export default function ApprovalsPage() {
  const { workspaceId, role } = useSession();
  const qc = useQueryClient();
  const location = useLocation();
  const [cursors, setCursors] = useState<(string | undefined)[]>([]);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const list = useQuery({
    queryKey: ['approvals', workspaceId, cursor],
    queryFn: () => listApprovals(workspaceId, cursor),
    enabled: Boolean(workspaceId),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  const names = useQuery({ queryKey: ['workflow-names', workspaceId], queryFn: () => workflowNames(workspaceId), enabled: Boolean(workspaceId), staleTime: 60_000 });

  // A link from a run (/approvals#<executionId>) lands on that run's card.
  const hash = decodeURIComponent(location.hash.slice(1));
  const loaded = Boolean(list.data);
  useEffect(() => {
    if (!hash || !loaded) return;
    const el = document.getElementById(hash);
    el?.scrollIntoView({ block: 'start' });
    el?.querySelector<HTMLElement>('input, textarea, select, button')?.focus({ preventScroll: true });
  }, [hash, loaded]);

  // Answered cards stay on screen with their outcome (the list's next refresh no longer has them).
  const [answers, setAnswers] = useState<Answers>({});
  const [answered, setAnswered] = useState<Approval[]>([]);
  const onAnswered = (item: Approval, contextId: string, answer: ResumeAnswer) => {
    setAnswers((prev) => ({ ...prev, [answerKey(item.log.executionId, contextId)]: answer }));
    setAnswered((prev) => (prev.some((i) => i.log.executionId === item.log.executionId) ? prev : [...prev, item]));
    void qc.invalidateQueries({ queryKey: ['logs', workspaceId] });
  };
  const fresh = list.data?.items ?? [];
  const items = [...fresh, ...answered.filter((a) => !fresh.some((i) => i.log.executionId === a.log.executionId))];
  return (
    <div className="stack">
      <PageHeader
        title="Approvals"
        description="Runs paused at a human block, waiting for someone to answer."
        actions={<Button onClick={() => void list.refetch()} busy={list.isFetching && !list.isLoading}>Refresh</Button>}
      />
      {!roleAllows(role, 'write') ? (
        <div className="banner banner-info" role="note">Your role in this workspace is read: you can see approvals, but the server refuses answers from read members.</div>
      ) : null}
      <ErrorBanner error={list.error} onRetry={() => void list.refetch()} />
      {list.isLoading ? <Loading label="Loading approvals…" /> : items.length === 0 ? (
        <EmptyState title="Nothing is waiting for an answer">Runs that reach a human block appear here until someone answers them.</EmptyState>
      ) : (
        <div className="stack">
          {items.map((item) => (
            <ApprovalCard key={item.log.executionId} item={item} workflowName={names.data?.get(item.log.workflowId) ?? item.log.workflowId}
              answers={answers} onAnswered={(contextId, answer) => onAnswered(item, contextId, answer)} />
          ))}
        </div>
      )}
      {cursors.length > 0 || list.data?.nextCursor ? (
        <nav className="row gap approvals-pager" aria-label="Pages of approvals">
          <Button disabled={cursors.length === 0} onClick={() => { setCursor(cursors[cursors.length - 1]); setCursors(cursors.slice(0, -1)); }}>← Newer</Button>
          <Button disabled={!list.data?.nextCursor} onClick={() => { setCursors([...cursors, cursor]); setCursor(list.data?.nextCursor); }}>Older →</Button>
        </nav>
      ) : null}
    </div>
  );
}
