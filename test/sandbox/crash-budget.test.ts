// Which workspaces keep ending the sandbox process (src/sandbox/crash-budget.ts): a crash charged only when
// one workspace's calls were running, suspects run apart, pauses that double.
import { describe, expect, it } from 'vitest';
import { CrashBudget } from '../../src/sandbox/crash-budget.js';

const MIN = 60_000;

describe('CrashBudget', () => {
  it('charges a crash to the one workspace whose calls were running, and pauses it at the second within the window', () => {
    const b = new CrashBudget();
    b.recordCrash(['a', 'a'], 0);
    expect(b.chargedCrashes).toBe(1);
    expect(b.pause('a', 1)).toBeUndefined();
    // Charged once: its calls run apart from now on, where the next crash can only be its own.
    expect(b.suspected('a', 1)).toBe(true);
    b.recordCrash(['a'], 5 * MIN);
    expect(b.pause('a', 5 * MIN + 1000)).toEqual({ remainingMs: MIN - 1000, crashes: 2 });
    expect(b.pause('a', 6 * MIN)).toBeUndefined();
    expect(b.pause('b', 5 * MIN + 1000)).toBeUndefined();
  });

  it('does not count crashes further apart than the window together', () => {
    const b = new CrashBudget({ windowMs: 10 * MIN });
    b.recordCrash(['a'], 0);
    b.recordCrash(['a'], 11 * MIN);
    expect(b.pause('a', 11 * MIN)).toBeUndefined();
    b.recordCrash(['a'], 12 * MIN);
    expect(b.pause('a', 12 * MIN)?.remainingMs).toBe(MIN);
  });

  it('makes suspects of every workspace whose calls shared a crash, charging none of them', () => {
    const b = new CrashBudget({ suspectMs: 10 * MIN });
    for (let i = 0; i < 5; i++) b.recordCrash(['a', 'b'], i);
    expect(b.chargedCrashes).toBe(0);
    expect(b.pause('a', 10)).toBeUndefined();
    expect(b.pause('b', 10)).toBeUndefined();
    expect(b.suspected('a', 10)).toBe(true);
    expect(b.suspected('b', 10 * MIN + 4)).toBe(false);
    expect(b.suspected('c', 10)).toBe(false);
  });

  it('doubles the pause each time a workspace earns one while it keeps crashing, up to the longest', () => {
    const b = new CrashBudget({ firstPauseMs: MIN, maxPauseMs: 5 * MIN, windowMs: 60 * MIN });
    const pauses: number[] = [];
    let now = 0;
    for (let i = 0; i < 5; i++) {
      b.recordCrash(['a'], now);
      b.recordCrash(['a'], now + 1);
      pauses.push(b.pause('a', now + 1)?.remainingMs ?? 0);
      now += 10 * MIN;
    }
    expect(pauses).toEqual([MIN, 2 * MIN, 4 * MIN, 5 * MIN, 5 * MIN]);
    // A quiet window later, it starts again from the first pause.
    now += 61 * MIN;
    b.recordCrash(['a'], now);
    b.recordCrash(['a'], now + 1);
    expect(b.pause('a', now + 1)?.remainingMs).toBe(MIN);
  });

  it('remembers a bounded number of workspaces, forgetting the least recently touched', () => {
    const b = new CrashBudget({ maxTracked: 2, strikesToPause: 1 });
    b.recordCrash(['a'], 0);
    b.recordCrash(['b'], 0);
    b.recordCrash(['c'], 0);
    expect(b.pause('a', 1)).toBeUndefined();
    expect(b.pause('b', 1)).toBeDefined();
    expect(b.pause('c', 1)).toBeDefined();
  });
});
