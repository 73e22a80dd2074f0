import { afterEach, describe, expect, it, vi } from 'vitest';
import { deadline } from '../../src/net/deadline.js';

describe('deadline', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('aborts with a TimeoutError once the time is up', async () => {
    vi.useFakeTimers();
    const d = deadline(1000, undefined, 'too slow');
    await vi.advanceTimersByTimeAsync(999);
    expect(d.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(d.signal.aborted).toBe(true);
    expect(d.signal.reason).toMatchObject({ name: 'TimeoutError', message: 'too slow' });
  });

  it("follows the caller's signal, with its reason, also when it is already aborted", () => {
    const caller = new AbortController();
    const d = deadline(60_000, caller.signal);
    caller.abort(new Error('client gone'));
    expect(d.signal.aborted).toBe(true);
    expect((d.signal.reason as Error).message).toBe('client gone');
    d.end();

    const early = deadline(60_000, AbortSignal.abort(new Error('before')));
    expect((early.signal.reason as Error).message).toBe('before');
    early.end();
  });

  it('end() clears the timer and lets go of the caller: nothing fires or stays behind', async () => {
    vi.useFakeTimers();
    const caller = new AbortController();
    const d = deadline(1000, caller.signal);
    expect(vi.getTimerCount()).toBe(1);
    d.end();
    expect(vi.getTimerCount()).toBe(0);
    caller.abort();
    await vi.advanceTimersByTimeAsync(5000);
    expect(d.signal.aborted).toBe(false);
  });
});
