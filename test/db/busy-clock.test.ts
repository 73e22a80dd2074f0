import { describe, expect, it } from 'vitest';
import { BusyClock } from '../../src/db/busy-clock.js';

describe('BusyClock', () => {
  it('counts overlapping work once, and the interval under way as far as it went', async () => {
    let now = 0;
    const clock = new BusyClock(() => now);
    clock.begin(); // 0..10, with a second piece 5..15 overlapping it
    now = 5;
    clock.begin();
    now = 10;
    clock.end();
    now = 15;
    clock.end();
    expect(clock.busyMs()).toBe(15);
    now = 40; // idle 15..40
    expect(clock.busyMs()).toBe(15);
    clock.begin();
    now = 44;
    expect(clock.busyMs()).toBe(19);
    clock.end();
    clock.end(); // an end without a begin is ignored
    now = 60;
    expect(clock.busyMs()).toBe(19);
  });

  it('tracks work that fails as well as work that succeeds', async () => {
    let now = 0;
    const clock = new BusyClock(() => now);
    const failing = clock.track(async () => {
      now = 7;
      throw new Error('boom');
    });
    await expect(failing).rejects.toThrow('boom');
    await clock.track(async () => {
      now = 10;
    });
    expect(clock.busyMs()).toBe(10);
  });
});
