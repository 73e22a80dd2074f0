// Tick arithmetic without a database: cron in a time zone (croner), epoch-aligned intervals, due ticks
// and what each missed-run policy makes of them.
import { describe, expect, it } from 'vitest';
import { decide, dueTicks, MAX_COUNTED_TICKS, nextTicks, tickerFor } from '../../src/schedules/timing.js';

const at = (s: string) => new Date(s).getTime();
const iso = (ms: number) => new Date(ms).toISOString();
const MIN = 60_000;

describe('tickers', () => {
  it('intervals tick at multiples of the interval since the epoch', () => {
    const t = tickerFor({ intervalSeconds: 3600 });
    expect(nextTicks(t, at('2030-01-01T10:20:00Z'), 2).map(iso)).toEqual(['2030-01-01T11:00:00.000Z', '2030-01-01T12:00:00.000Z']);
    expect(t.next(at('2030-01-01T11:00:00Z'))).toBe(at('2030-01-01T12:00:00Z'));
    expect(t.latest(at('2030-01-01T11:00:00Z'))).toBe(at('2030-01-01T11:00:00Z'));
  });

  it('cron expressions are read in their time zone, across a daylight-saving change', () => {
    const t = tickerFor({ cron: '30 8 * * *', timezone: 'Europe/Berlin' });
    expect(nextTicks(t, at('2030-03-30T00:00:00Z'), 2).map(iso)).toEqual(['2030-03-30T07:30:00.000Z', '2030-03-31T06:30:00.000Z']);
    const secs = tickerFor({ cron: '*/15 * * * * *' });
    expect(nextTicks(secs, at('2030-01-01T00:00:00Z'), 3).map(iso)).toEqual(['2030-01-01T00:00:15.000Z', '2030-01-01T00:00:30.000Z', '2030-01-01T00:00:45.000Z']);
    expect(secs.latest(at('2030-01-01T00:00:44.999Z'))).toBe(at('2030-01-01T00:00:30Z'));
  });
});

describe('due ticks and the missed-run policies', () => {
  const every10 = tickerFor({ intervalSeconds: 600 });
  const cursor = at('2030-01-01T00:00:00Z');

  it('counts the ticks after the cursor up to now (capped, the latest still exact)', () => {
    expect(dueTicks(every10, cursor, cursor + 9 * MIN)).toEqual({ count: 0, latest: null });
    expect(dueTicks(every10, cursor, cursor + 35 * MIN)).toEqual({ count: 3, latest: cursor + 30 * MIN });
    const perSecond = tickerFor({ cron: '* * * * * *' });
    const week = dueTicks(perSecond, cursor, cursor + 7 * 86_400_000);
    expect(week).toEqual({ count: MAX_COUNTED_TICKS, latest: cursor + 7 * 86_400_000 });
  });

  it('skip runs only an on-time tick; runOnce runs once for all of them', () => {
    const late = (now: number) => (tick: number) => now - tick > MIN;
    const onTime = cursor + 10 * MIN + 5_000;
    expect(decide(every10, 'skip', cursor, onTime, late(onTime))).toEqual({ cursor: cursor + 10 * MIN, fire: { tick: cursor + 10 * MIN, missedTicks: 0 } });
    expect(decide(every10, 'runOnce', cursor, onTime, late(onTime))).toEqual({ cursor: cursor + 10 * MIN, fire: { tick: cursor + 10 * MIN, missedTicks: 0 } });
    const down = cursor + 35 * MIN;
    expect(decide(every10, 'skip', cursor, down, late(down))).toEqual({ cursor: cursor + 30 * MIN });
    expect(decide(every10, 'runOnce', cursor, down, late(down))).toEqual({ cursor: cursor + 30 * MIN, fire: { tick: cursor + 30 * MIN, missedTicks: 3 } });
    // Down through two ticks, back just after a third: that one is on time, the two before it missed.
    const back = cursor + 30 * MIN + 1_000;
    expect(decide(every10, 'skip', cursor, back, late(back))).toEqual({ cursor: cursor + 30 * MIN, fire: { tick: cursor + 30 * MIN, missedTicks: 0 } });
    expect(decide(every10, 'runOnce', cursor, back, late(back))).toEqual({ cursor: cursor + 30 * MIN, fire: { tick: cursor + 30 * MIN, missedTicks: 2 } });
    expect(decide(every10, 'skip', cursor, cursor + 5 * MIN, late(cursor))).toBeUndefined();
  });
});
