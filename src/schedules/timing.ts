// Tick arithmetic: when a schedule fires (croner for cron expressions in a time zone, epoch-aligned
// multiples for intervals), which ticks are due, and what the missed-run policy makes of them.
import { Cron } from 'croner';
import type { ScheduleConfig } from '../engine/index.js';

export interface Ticker {
  /** The first tick strictly after `afterMs`; null when there is none. */
  next(afterMs: number): number | null;
  /** The last tick at or before `atMs`; null when there is none. */
  latest(atMs: number): number | null;
}

/** Parses a cron expression as schedules read it (five fields, or six with seconds first). Throws on a bad one. */
export function parseCron(expression: string, timezone = 'UTC'): Cron {
  return new Cron(expression, { timezone, paused: true, mode: '5-or-6-parts' });
}

const cronCache = new Map<string, Cron>();

function cachedCron(expression: string, timezone: string): Cron {
  const key = `${timezone}\0${expression}`;
  let c = cronCache.get(key);
  if (!c) {
    c = parseCron(expression, timezone);
    if (cronCache.size > 10_000) cronCache.clear();
    cronCache.set(key, c);
  }
  return c;
}

export function tickerFor(config: Pick<ScheduleConfig, 'cron' | 'timezone' | 'intervalSeconds'>): Ticker {
  if (config.intervalSeconds !== undefined) {
    const iv = config.intervalSeconds * 1000;
    return {
      next: (after) => (Math.floor(after / iv) + 1) * iv,
      latest: (at) => Math.floor(at / iv) * iv,
    };
  }
  const cron = cachedCron(config.cron ?? '', config.timezone ?? 'UTC');
  return {
    next: (after) => cron.nextRun(new Date(after))?.getTime() ?? null,
    latest: (at) => cron.previousRuns(1, new Date(at + 1))[0]?.getTime() ?? null,
  };
}

/**
 * The shortest time between two ticks of a schedule, in seconds: its interval, or for a cron expression the
 * closest pair among its next 200 ticks from `fromMs` (cron fields repeat, so the closest pair shows up early).
 */
export function shortestGapSeconds(config: Pick<ScheduleConfig, 'cron' | 'timezone' | 'intervalSeconds'>, fromMs: number): number {
  if (config.intervalSeconds !== undefined) return config.intervalSeconds;
  const ticks = nextTicks(tickerFor(config), fromMs, 200);
  let gap = Infinity;
  for (let i = 1; i < ticks.length; i++) gap = Math.min(gap, (ticks[i] - ticks[i - 1]) / 1000);
  return gap;
}

/** The next `n` ticks after `afterMs`. */
export function nextTicks(ticker: Ticker, afterMs: number, n: number): number[] {
  const out: number[] = [];
  let t: number | null = afterMs;
  while (out.length < n && (t = ticker.next(t)) !== null) out.push(t);
  return out;
}

/** Ticks counted one by one at most (a per-second cron down for a week has 600,000). */
export const MAX_COUNTED_TICKS = 1000;

/** The ticks in (cursor, now]: how many (at most MAX_COUNTED_TICKS) and the latest. */
export function dueTicks(ticker: Ticker, cursorMs: number, nowMs: number): { count: number; latest: number | null } {
  let count = 0;
  let t: number | null = cursorMs;
  let last: number | null = null;
  while ((t = ticker.next(t)) !== null && t <= nowMs) {
    last = t;
    if (++count >= MAX_COUNTED_TICKS) return { count, latest: ticker.latest(nowMs) };
  }
  return { count, latest: last };
}

/** What to do with the due ticks of a schedule. */
export interface Decision {
  /** Every due tick is handled once the cursor reaches it. */
  cursor: number;
  /** The tick to run, if any, and how many missed ticks it stands for (0: on time). */
  fire?: { tick: number; missedTicks: number };
}

/**
 * The due ticks (after the cursor, up to now) under a missed-run policy. `missed(tick)` tells a tick
 * that passed while no scheduler ran (or was seen too late) from one seen on time. `skip` runs the
 * latest due tick only when it is on time: missed ticks are dropped and the schedule goes on with its
 * next tick. `runOnce` runs once, at the latest due tick, for all of them.
 */
export function decide(
  ticker: Ticker, policy: ScheduleConfig['missedRuns'], cursorMs: number, nowMs: number, missed: (tickMs: number) => boolean,
): Decision | undefined {
  const { count, latest } = dueTicks(ticker, cursorMs, nowMs);
  if (count === 0 || latest === null) return undefined;
  const late = missed(latest);
  if (policy === 'runOnce') return { cursor: latest, fire: { tick: latest, missedTicks: late ? count : count - 1 } };
  return late ? { cursor: latest } : { cursor: latest, fire: { tick: latest, missedTicks: 0 } };
}
