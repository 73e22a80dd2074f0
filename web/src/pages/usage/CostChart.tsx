// Cost per day as an inline SVG bar chart; the same figures are in a table for screen readers.
import { formatUsd } from '../runs/format';
import type { DayCost } from './api';

const W = 720;
const H = 220;
const PAD = { top: 12, right: 12, bottom: 28, left: 56 };

/** A round axis maximum (1, 2, 2.5 or 5 times a power of ten) at or above `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 0.01;
  const pow = 10 ** Math.floor(Math.log10(max));
  const n = max / pow;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 2.5 ? 2.5 : n <= 5 ? 5 : 10) * pow;
}

const shortDate = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const label = (date: string) => shortDate.format(new Date(`${date}T00:00:00Z`));

export function CostChart({ days, caption }: { days: DayCost[]; caption: string }) {
  const top = niceMax(Math.max(0, ...days.map((d) => d.costUsd)));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(2, slot * 0.7);
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const ticks = [0, top / 4, top / 2, (3 * top) / 4, top];
  const labelEvery = Math.ceil(days.length / 8);
  const total = days.reduce((s, d) => s + d.costUsd, 0);
  return (
    <figure className="usage-chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="usage-chart-title" className="usage-chart__svg">
        <title id="usage-chart-title">{`${caption}: ${formatUsd(total)} over ${days.length} days`}</title>
        {ticks.map((t) => (
          <g key={t}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} className="usage-chart__grid" />
            <text x={PAD.left - 6} y={y(t) + 4} textAnchor="end" className="usage-chart__label">{formatUsd(t)}</text>
          </g>
        ))}
        {days.map((d, i) => {
          const x = PAD.left + i * slot + (slot - barW) / 2;
          const h = Math.max(d.costUsd > 0 ? 1 : 0, (d.costUsd / top) * plotH);
          return (
            <g key={d.date}>
              <rect x={x} y={PAD.top + plotH - h} width={barW} height={h} className="usage-chart__bar" data-date={d.date}>
                <title>{`${label(d.date)}: ${formatUsd(d.costUsd)}, ${d.runs} run${d.runs === 1 ? '' : 's'}`}</title>
              </rect>
              {i % labelEvery === 0 && (
                <text x={x + barW / 2} y={H - 8} textAnchor="middle" className="usage-chart__label">{label(d.date)}</text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption className="usage-chart__caption">{caption}</figcaption>
      <details className="usage-chart__table">
        <summary>Show the figures as a table</summary>
        <table>
          <thead><tr><th scope="col">Day (UTC)</th><th scope="col">Cost</th><th scope="col">Runs</th></tr></thead>
          <tbody>
            {days.map((d) => <tr key={d.date}><td>{d.date}</td><td>{formatUsd(d.costUsd)}</td><td>{d.runs}</td></tr>)}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
