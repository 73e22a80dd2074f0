import { describe, expect, it } from 'vitest';
import type { ConcurrencySlots, RateLimiter } from '../../src/limits/rate-limiter.js';

export interface FakeClock { t: number; now(): number }
export const fakeClock = (): FakeClock => ({ t: Date.UTC(2026, 0, 1), now() { return this.t; } });

/** One suite every rate limiter and slot adapter passes (memory, PostgreSQL, Redis). */
export function limiterConformance(name: string, make: (clock: FakeClock) => Promise<RateLimiter & ConcurrencySlots>, skipReason?: string): void {
  // A suite that cannot run here is reported as skipped with its reason, never left out unseen.
  describe.skipIf(Boolean(skipReason))(`rate limiter conformance: ${name}${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
    it('starts full, refuses past the burst, refills by whole minutes up to the burst', async () => {
      const clock = fakeClock();
      const l = await make(clock);
      const key = `k-${Math.random()}`;
      for (let i = 0; i < 4; i++) expect((await l.take(key, 2, 4)).allowed).toBe(true);
      const refused = await l.take(key, 2, 4);
      expect(refused.allowed).toBe(false);
      expect(refused.state).toMatchObject({ limit: 4, remaining: 0, ratePerMinute: 2 });
      expect(refused.state.retryAfterMs).toBeGreaterThan(0);
      expect(refused.state.retryAfterMs).toBeLessThanOrEqual(60_000);
      clock.t += 59_000;
      expect((await l.take(key, 2, 4)).allowed).toBe(false);
      clock.t += 1_000;
      expect((await l.peek(key, 2, 4)).remaining).toBe(2);
      expect((await l.take(key, 2, 4)).allowed).toBe(true);
      expect((await l.take(key, 2, 4)).allowed).toBe(true);
      expect((await l.take(key, 2, 4)).allowed).toBe(false);
      clock.t += 3_600_000;
      expect((await l.peek(key, 2, 4)).remaining).toBe(4);
      clock.t -= 120_000; // a clock stepping back never removes tokens
      expect((await l.peek(key, 2, 4)).remaining).toBe(4);
      await l.close();
    });

    it('takes several tokens all at once or none, also when requests race', async () => {
      const clock = fakeClock();
      const l = await make(clock);
      const key = `m-${Math.random()}`;
      const first = await l.take(key, 5, 10, 4);
      expect(first).toMatchObject({ allowed: true, state: { remaining: 6 } });
      expect(await l.take(key, 5, 10, 7)).toMatchObject({ allowed: false, state: { remaining: 6 } });
      expect((await l.peek(key, 5, 10)).remaining).toBe(6); // the refusal took nothing
      // Two requests of 4 against 6 tokens: one is admitted whole, the other takes nothing.
      const raced = await Promise.all([l.take(key, 5, 10, 4), l.take(key, 5, 10, 4)]);
      expect(raced.filter((r) => r.allowed)).toHaveLength(1);
      expect((await l.peek(key, 5, 10)).remaining).toBe(2);
      // More than the burst never passes, even on a full bucket.
      const fresh = `f-${Math.random()}`;
      expect((await l.take(fresh, 5, 10, 11)).allowed).toBe(false);
      expect((await l.peek(fresh, 5, 10)).remaining).toBe(10);
      expect((await l.take(fresh, 5, 10, 10)).allowed).toBe(true);
      expect((await l.take(fresh, 5, 10)).allowed).toBe(false);
      await l.close();
    });

    it('peeking does not consume', async () => {
      const l = await make(fakeClock());
      const key = `p-${Math.random()}`;
      for (let i = 0; i < 5; i++) expect((await l.peek(key, 1, 2)).remaining).toBe(2);
      await l.close();
    });

    it('hands out at most `limit` slots, frees them on release and on expiry', async () => {
      const clock = fakeClock();
      const l = await make(clock);
      const acct = `a-${Math.random()}`;
      const take = (token: string) => l.acquire(acct, 2, 10_000, token);
      expect(await take('a')).toBe(true);
      expect(await take('b')).toBe(true);
      expect(await take('x')).toBe(false);
      await l.release(acct, 'a');
      expect(await take('c')).toBe(true);
      expect(await take('y')).toBe(false);
      clock.t += 10_001;
      expect(await take('d')).toBe(true);
      await l.close();
    });

    it('admits exactly `limit` of many concurrent acquirers', async () => {
      const l = await make(fakeClock());
      const acct = `c-${Math.random()}`;
      const got = await Promise.all(Array.from({ length: 20 }, (_, i) => l.acquire(acct, 5, 10_000, `t${i}`)));
      expect(got.filter(Boolean)).toHaveLength(5);
      await l.close();
    });
  });
}
