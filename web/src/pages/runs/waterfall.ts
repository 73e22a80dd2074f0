// Layout of a run's waterfall: each trace entry as a bar placed on the run's time axis.
import type { TraceEntry } from './api';

export interface WaterfallBar {
  entry: TraceEntry;
  /** Start offset from the run's start, ms. */
  offsetMs: number;
  /** Left edge and width as percentages of the axis (the width never under a visible minimum). */
  leftPct: number;
  widthPct: number;
  /** Loop iteration or parallel branch this execution belongs to, from its key (e.g. "each[2]"), if any. */
  scope: string | null;
}

export interface WaterfallLayout { bars: WaterfallBar[]; totalMs: number; ticks: number[] }

/** Smallest bar width, so that a 0 ms block is still a visible, clickable mark. */
const MIN_WIDTH_PCT = 0.6;

/** "Nice" tick spacing (1, 2 or 5 times a power of ten) giving about `target` ticks. */
export function tickStep(totalMs: number, target = 5): number {
  if (totalMs <= 0) return 1;
  const raw = totalMs / target;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const n = raw / pow;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * pow;
}

/** The scope part of a trace key: what follows the block id, when the key carries one. */
function scopeOf(entry: TraceEntry): string | null {
  if (entry.key === entry.blockId || !entry.key.startsWith(entry.blockId)) return null;
  // Keys are the block id plus "#<container>:<index>" per enclosing loop or parallel.
  const parts = entry.key.slice(entry.blockId.length).split('#').filter(Boolean).map((p) => p.replace(/:(\d+)$/, '[$1]'));
  return parts.length ? parts.join(' › ') : null;
}

/**
 * Places entries on a shared axis from the run start (or the first block's start when earlier) to the
 * later of the run's end and the last block's end. `nowMs` stands in for the end of a running run.
 */
export function layoutWaterfall(trace: TraceEntry[], runStartIso: string, runEndMs: number | null, nowMs?: number): WaterfallLayout {
  const starts = trace.map((e) => Date.parse(e.startedAt));
  const runStart = Date.parse(runStartIso);
  const origin = Math.min(Number.isFinite(runStart) ? runStart : Infinity, ...starts.filter(Number.isFinite));
  if (!Number.isFinite(origin)) return { bars: [], totalMs: 0, ticks: [0] };
  const ends = trace.map((e, i) => (starts[i] ?? origin) + Math.max(0, e.durationMs));
  const end = Math.max(origin, ...ends, runEndMs ?? 0, nowMs ?? 0);
  const totalMs = Math.max(1, end - origin);
  const bars = trace
    .map((entry, i) => {
      const offsetMs = Math.max(0, (Number.isFinite(starts[i]) ? (starts[i] as number) : origin) - origin);
      const leftPct = Math.min(100 - MIN_WIDTH_PCT, (offsetMs / totalMs) * 100);
      const widthPct = Math.min(100 - leftPct, Math.max(MIN_WIDTH_PCT, (Math.max(0, entry.durationMs) / totalMs) * 100));
      return { entry, offsetMs, leftPct, widthPct, scope: scopeOf(entry) };
    })
    .sort((a, b) => a.offsetMs - b.offsetMs || a.entry.key.localeCompare(b.entry.key));
  const step = tickStep(totalMs);
  const ticks: number[] = [];
  for (let t = 0; t <= totalMs + step / 1000; t += step) ticks.push(t);
  return { bars, totalMs, ticks };
}
