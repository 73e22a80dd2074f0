// Time for the scheduler, injectable: `now` and one-shot timers. The system clock in production; tests
// hand in a manual clock and advance it, so nothing waits for real time.

export interface TimerHandle {
  cancel(): void;
}

export interface SchedulerClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once, `ms` from now (0 or less: as soon as possible). */
  setTimer(ms: number, fn: () => void): TimerHandle;
}

/** setTimeout's longest delay (about 24.8 days); longer waits are chained. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export const systemClock: SchedulerClock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    let timer: NodeJS.Timeout;
    const arm = (left: number) => {
      timer = setTimeout(() => (left > MAX_DELAY_MS ? arm(left - MAX_DELAY_MS) : fn()), Math.max(0, Math.min(left, MAX_DELAY_MS)));
      // A pending tick never keeps the process alive on its own.
      timer.unref();
    };
    arm(ms);
    return { cancel: () => clearTimeout(timer) };
  },
};
