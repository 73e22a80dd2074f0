// The run waterfall's layout (web/src/pages/runs/waterfall.ts): bars on a shared time axis, visible
// minimum widths, loop and parallel scopes, and tick spacing.
import { describe, expect, it } from 'vitest';
import type { TraceEntry } from '../../web/src/pages/runs/api';
import { layoutWaterfall, tickStep } from '../../web/src/pages/runs/waterfall';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const entry = (blockId: string, startMs: number, durationMs: number, key = blockId): TraceEntry =>
  ({ blockId, key, name: blockId, type: 'function', status: 'success', startedAt: at(startMs), durationMs });

describe('tickStep', () => {
  it('picks 1, 2 or 5 times a power of ten', () => {
    expect(tickStep(1000)).toBe(200);
    expect(tickStep(2300)).toBe(500);
    expect(tickStep(40)).toBe(10);
    expect(tickStep(0)).toBe(1);
  });
});

describe('layoutWaterfall', () => {
  it('places bars by offset and duration on the run axis', () => {
    const { bars, totalMs, ticks } = layoutWaterfall([entry('b', 500, 500), entry('a', 0, 250)], at(0), T0 + 1000);
    expect(totalMs).toBe(1000);
    expect(bars.map((b) => [b.entry.blockId, b.offsetMs, b.leftPct, b.widthPct])).toEqual([['a', 0, 0, 25], ['b', 500, 50, 50]]);
    expect(ticks).toEqual([0, 200, 400, 600, 800, 1000]);
  });

  it('gives a 0 ms block a visible width that stays inside the axis', () => {
    const { bars } = layoutWaterfall([entry('a', 0, 1000), entry('z', 1000, 0)], at(0), T0 + 1000);
    const z = bars.find((b) => b.entry.blockId === 'z')!;
    expect(z.widthPct).toBeGreaterThan(0);
    expect(z.leftPct + z.widthPct).toBeLessThanOrEqual(100);
  });

  it('extends the axis to now for a running run and to blocks that started before the run', () => {
    expect(layoutWaterfall([entry('a', 0, 100)], at(0), null, T0 + 4000).totalMs).toBe(4000);
    const early = layoutWaterfall([entry('a', -200, 100)], at(0), T0 + 800);
    expect(early.totalMs).toBe(1000);
    expect(early.bars[0].offsetMs).toBe(0);
  });

  it('reads the loop or parallel scope from the trace key', () => {
    const { bars } = layoutWaterfall([entry('body', 0, 10, 'body#each:2'), entry('deep', 10, 10, 'deep#each:0#par:1'), entry('top', 20, 10)], at(0), T0 + 30);
    expect(bars.map((b) => b.scope)).toEqual(['each[2]', 'each[0] › par[1]', null]);
  });

  it('is empty without any valid time', () => {
    expect(layoutWaterfall([], 'not a date', null)).toEqual({ bars: [], totalMs: 0, ticks: [0] });
  });
});
