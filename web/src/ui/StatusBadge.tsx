// StatusBadge: a coloured pill for a status word (completed, failed, running, queued, paused, cancelled,
// pending, processing, deployed, draft, ...). Props: status (string), label? (text shown instead of status).
// The colour is never the only signal: the word is always shown.
const tone: Record<string, string> = {
  completed: 'ok', success: 'ok', deployed: 'ok', active: 'ok', succeeded: 'ok',
  failed: 'bad', error: 'bad', cancelled: 'bad', revoked: 'bad', timeout: 'bad',
  running: 'info', processing: 'info', queued: 'info', pending: 'info',
  paused: 'warn', waiting: 'warn', 'needs redeploy': 'warn', draft: 'neutral',
};

export function StatusBadge({ status, label }: { status: string; label?: string }) {
  return <span className={`badge badge-${tone[status.toLowerCase()] ?? 'neutral'}`}>{label ?? status}</span>;
}
