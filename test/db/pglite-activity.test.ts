import { describe, expect, it } from 'vitest';
import { SharedActivity } from '../../src/db/pglite-activity.js';

describe('SharedActivity', () => {
  it('counts overlapping work once, and the interval under way as far as it went', () => {
    let now = 1_000_000n;
    const clock = new SharedActivity(SharedActivity.allocate(), () => now);
    clock.begin(); // 0..10 ms, with a second piece 5..15 overlapping it
    now += 5_000n;
    clock.begin();
    now += 5_000n;
    clock.end();
    now += 5_000n;
    clock.end();
    expect(clock.read().busySeconds).toBeCloseTo(0.015, 9);
    now += 25_000n; // idle
    expect(clock.read().busySeconds).toBeCloseTo(0.015, 9);
    clock.begin();
    now += 4_000n;
    expect(clock.read().busySeconds).toBeCloseTo(0.019, 9);
    clock.end();
    clock.end(); // an end without a begin is ignored
    now += 16_000n;
    expect(clock.read().busySeconds).toBeCloseTo(0.019, 9);
  });

  it('shares its totals through the memory, and a stopped thread hands over the interval it had under way', async () => {
    let now = 1_000_000n;
    const memory = SharedActivity.allocate();
    const stopped = new SharedActivity(memory, () => now); // the database thread that gets terminated
    const reader = new SharedActivity(memory, () => now); // the main thread
    stopped.statementRan();
    stopped.fileSynced();
    await expect(stopped.track(async () => {
      now += 7_000n;
      throw new Error('boom');
    })).rejects.toThrow('boom');
    stopped.begin(); // never ended: the thread is stopped in the middle of it
    now += 3_000n;
    reader.threadStopped();
    now += 50_000n; // the restart: not busy time
    const next = new SharedActivity(memory, () => now);
    next.statementRan();
    await next.track(async () => {
      now += 2_000n;
    });
    expect(reader.read()).toEqual({ busySeconds: 0.012, statements: 2, fileSyncs: 1 });
  });

  it('never reads a busy total below an earlier one', () => {
    let now = 1_000_000n;
    const memory = SharedActivity.allocate();
    const worker = new SharedActivity(memory, () => now);
    const reader = new SharedActivity(memory, () => now);
    worker.begin();
    now += 10_000n;
    const first = reader.read().busySeconds;
    now -= 2_000n; // the interval ends at a moment the reader's clock had already passed
    worker.end();
    expect(reader.read().busySeconds).toBe(first);
  });
});
