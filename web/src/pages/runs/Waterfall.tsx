// A run's blocks as a waterfall: one row per block execution on the run's time axis. Each row is a
// button that opens the block's input, output, error, logs and timing right below it.
import { useId, useState, type CSSProperties } from 'react';
import { StatusBadge, formatDate, formatDuration } from '../../ui';
import type { TraceEntry } from './api';
import { prettyValue } from './format';
import { layoutWaterfall, type WaterfallBar } from './waterfall';

/** A console entry of a function block ({level, message}) as one line. */
function logLine(entry: unknown): string {
  if (entry && typeof entry === 'object' && 'message' in entry) {
    const { level, message } = entry as { level?: unknown; message?: unknown };
    return `${typeof level === 'string' && level !== 'log' ? `[${level}] ` : ''}${typeof message === 'string' ? message : prettyValue(message)}`;
  }
  return prettyValue(entry);
}

/** Where a bar's duration label goes: inside a wide bar, else after it (before it near the right edge). */
function labelStyle(bar: WaterfallBar): { className: string; style: CSSProperties } {
  if (bar.widthPct >= 18) return { className: 'wf-bar__time wf-bar__time--inside', style: { left: `${bar.leftPct}%` } };
  const end = bar.leftPct + bar.widthPct;
  if (end > 82) return { className: 'wf-bar__time wf-bar__time--before', style: { right: `${100 - bar.leftPct}%` } };
  return { className: 'wf-bar__time', style: { left: `${end}%` } };
}

function BlockDetail({ bar, id }: { bar: WaterfallBar; id: string }) {
  const e = bar.entry;
  return (
    <div className="wf-detail" id={id} role="region" aria-label={`Details of ${e.name}`}>
      <dl className="run-summary">
        <div><dt>Block</dt><dd>{e.name} <span className="muted">({e.type}, id {e.blockId})</span></dd></div>
        <div><dt>Status</dt><dd><StatusBadge status={e.status === 'success' ? 'completed' : e.status} label={e.status} /></dd></div>
        <div><dt>Started</dt><dd>{formatDate(e.startedAt)} <span className="muted">(+{formatDuration(bar.offsetMs)})</span></dd></div>
        <div><dt>Duration</dt><dd>{formatDuration(e.durationMs)}</dd></div>
        {bar.scope ? <div><dt>Iteration</dt><dd className="mono">{bar.scope}</dd></div> : null}
        {e.attempts && e.attempts > 1 ? <div><dt>Attempts</dt><dd>{e.attempts}</dd></div> : null}
      </dl>
      {e.error ? <div><h3>Error</h3><pre className="wf-detail__error">{e.error}</pre></div> : null}
      <div className="grid-2">
        <div><h3>Input</h3>{e.input === undefined ? <p className="muted">No input recorded.</p> : <pre>{prettyValue(e.input)}</pre>}</div>
        <div><h3>Output</h3>{e.output !== undefined ? <pre>{prettyValue(e.output)}</pre>
          : e.outputOmittedBytes !== undefined
            ? <p className="muted">Not kept in the trace: {e.outputOmittedBytes.toLocaleString()} bytes, past the run's trace budget (WEFT_MAX_TRACE_OUTPUT_BYTES).</p>
            : <p className="muted">No output recorded.</p>}</div>
      </div>
      {e.logs && e.logs.length > 0 ? <div><h3>Console</h3><pre>{e.logs.map(logLine).join('\n')}</pre></div> : null}
      {e.logsDropped ? <p className="muted">{e.logsDropped.toLocaleString()} more console lines were not kept (1,000 a block, and the run's WEFT_MAX_TRACE_LOG_CHARS).</p> : null}
    </div>
  );
}

export function Waterfall({ trace, runStart, runEndMs, nowMs }: { trace: TraceEntry[]; runStart: string; runEndMs: number | null; nowMs?: number }) {
  const [open, setOpen] = useState<string | null>(null);
  const base = useId();
  const layout = layoutWaterfall(trace, runStart, runEndMs, nowMs);
  const gridPct = layout.ticks.length > 1 ? ((layout.ticks[1] as number) / layout.totalMs) * 100 : 100;
  return (
    <div className="wf" style={{ ['--wf-grid' as string]: `${gridPct}%` }}>
      <div className="wf-axis" aria-hidden="true">
        <span />
        <div className="wf-axis__ticks">
          {layout.ticks.map((t) => (
            <span key={t} className="wf-axis__tick" style={{ left: `${(t / layout.totalMs) * 100}%` }}>{formatDuration(t)}</span>
          ))}
        </div>
      </div>
      <ol className="wf-list" aria-label="Blocks in the order they started">
        {layout.bars.map((bar) => {
          const e = bar.entry;
          const expanded = open === e.key;
          const detailId = `${base}-${e.key}`;
          const tone = e.status === 'error' ? ' wf-bar--error' : e.status === 'paused' ? ' wf-bar--paused' : e.status === 'replayed' ? ' wf-bar--replayed' : '';
          const label = labelStyle(bar);
          return (
            <li key={e.key}>
              <button
                type="button"
                className="wf-row"
                aria-expanded={expanded}
                aria-controls={expanded ? detailId : undefined}
                onClick={() => setOpen(expanded ? null : e.key)}
              >
                <span className="wf-row__label">
                  <span className="wf-row__name">{e.name}</span>
                  <span className="wf-row__meta">{e.type}{bar.scope ? ` · ${bar.scope}` : ''} · {e.status}</span>
                </span>
                <span className="wf-row__track">
                  <span className={`wf-bar${tone}`} style={{ left: `${bar.leftPct}%`, width: `${bar.widthPct}%` }} />
                  <span className={label.className} style={label.style}>{formatDuration(e.durationMs)}</span>
                </span>
              </button>
              {expanded ? <BlockDetail bar={bar} id={detailId} /> : null}
            </li>
          );
        })}
      </ol>
      <div className="wf-legend" aria-hidden="true">
        <span>succeeded</span><span className="wf-legend--error">failed</span>
        <span className="wf-legend--paused">paused</span><span className="wf-legend--replayed">replayed from a checkpoint</span>
      </div>
    </div>
  );
}
