import { describe, expect, it } from 'vitest';
import type { JobQueue } from '../../src/queue/port.js';

/**
 * One suite every JobQueue adapter passes. `skipReason` (e.g. a missing TEST_REDIS_URL) reports the
 * suite as skipped, with the reason in its name, instead of leaving it out unseen. `reserves`: the adapter
 * offers `reserve` (its worker shares the caller's process).
 */
export function queueConformance(name: string, make: (concurrency: number) => JobQueue, skipReason?: string, opts: { reserves?: boolean } = {}): void {
  describe.skipIf(Boolean(skipReason))(`JobQueue conformance: ${name}${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
    it('delivers every enqueued job exactly once, `concurrency` at a time', async () => {
      const q = make(3);
      const seen: string[] = [];
      let running = 0;
      let peak = 0;
      // The first jobs hold until three run at once: the queue must start that many and no more.
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      let full!: () => void;
      const threeRunning = new Promise<void>((r) => (full = r));
      const done = new Promise<void>((resolve) => {
        q.work(async (id) => {
          running++;
          peak = Math.max(peak, running);
          if (running === 3) full();
          await gate;
          seen.push(id);
          running--;
          if (seen.length === 30) resolve();
        });
      });
      for (let i = 0; i < 30; i++) await q.enqueue(`job:${i}`);
      await threeRunning;
      open();
      await done;
      await q.close(1000);
      expect(seen.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `job:${i}`).sort());
      expect(peak).toBe(3);
    });

    it('ignores a repeated enqueue of a job that is still pending', async () => {
      const q = make(1);
      let calls = 0;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      await q.enqueue('blocker');
      await q.enqueue('dup');
      await q.enqueue('dup');
      const finished = new Promise<void>((resolve) => {
        q.work(async (id) => {
          if (id === 'blocker') await gate;
          if (id === 'dup') {
            calls++;
            resolve();
          }
        });
      });
      release();
      await finished;
      await new Promise((r) => setTimeout(r, 200));
      await q.close(1000);
      expect(calls).toBe(1);
    });

    it('delivers another dispatch of a job that is still running (a takeover), but not the same dispatch again', async () => {
      const q = make(4);
      const starts: string[] = [];
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let twice!: () => void;
      const bothStarted = new Promise<void>((r) => (twice = r));
      q.work(async (id) => {
        starts.push(id);
        if (starts.length === 2) twice();
        await gate;
      });
      await q.enqueue('held', 0);
      await new Promise((r) => setTimeout(r, 100)); // the first dispatch is running now
      await q.enqueue('held', 0);
      await q.enqueue('held', 1);
      await bothStarted;
      await new Promise((r) => setTimeout(r, 200));
      release();
      await q.close(1000);
      expect(starts).toEqual(['held', 'held']);
    });

    it('waits for running jobs on close', async () => {
      const q = make(2);
      let finished = false;
      const started = new Promise<void>((resolve) => {
        q.work(async () => {
          resolve();
          await new Promise((r) => setTimeout(r, 300));
          finished = true;
        });
      });
      await q.enqueue('slow');
      await started;
      await q.close(5000);
      expect(finished).toBe(true);
    });

    it('close is idempotent but every call waits again for the jobs still running, up to its grace', async () => {
      const q = make(2);
      let finished = false;
      let finish!: () => void;
      const held = new Promise<void>((r) => (finish = r));
      const started = new Promise<void>((resolve) => {
        q.work(async () => {
          resolve();
          await held;
          finished = true;
        });
      });
      await q.enqueue('slow');
      await started;
      await q.close(100); // the grace expires while the job is held: close returns without it
      expect(finished).toBe(false);
      const second = q.close(60_000); // the second call waits for it again
      finish();
      await second;
      expect(finished).toBe(true);
    });

    it('close with nothing running returns promptly, also before work()', async () => {
      const idle = make(1);
      // A close that waited out its grace would outlast the test's timeout.
      await idle.close(600_000);
      await idle.close(600_000);
    });

    it('stops taking jobs on close; enqueue afterwards does nothing', async () => {
      const q = make(1);
      const seen: string[] = [];
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const started = new Promise<void>((resolve) => {
        q.work(async (id) => {
          seen.push(id);
          if (id === 'first') {
            resolve();
            await gate;
          }
        });
      });
      await q.enqueue('first');
      await started;
      const closing = q.close(5000);
      await q.enqueue('after-close');
      release();
      await closing;
      await new Promise((r) => setTimeout(r, 300));
      expect(seen).toEqual(['first']);
    });

    it('runs a finished job again when it is enqueued again', async () => {
      const q = make(1);
      let runs = 0;
      let done!: () => void;
      let wait = new Promise<void>((r) => (done = r));
      q.work(async (id) => {
        if (id === 'again') runs++;
        done();
      });
      await q.enqueue('again');
      await wait;
      // The handler has returned; give the adapter a moment to record the job as finished.
      await new Promise((r) => setTimeout(r, 200));
      wait = new Promise<void>((r) => (done = r));
      await q.enqueue('again');
      await wait;
      await q.close(1000);
      expect(runs).toBe(2);
    }, 15_000);

    // Only adapters whose worker shares the caller's process offer `reserve` (the in-process queue).
    it.skipIf(!opts.reserves)('reserve: a free slot only, after waiting jobs, counted against `concurrency` until its job settles', async () => {
      const q = make(2);
      expect(q.reserve?.()).toBeUndefined(); // no handler works yet
      const ran: string[] = [];
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      q.work(async (id) => {
        await gate;
        ran.push(id);
      });
      const first = q.reserve?.();
      const second = q.reserve?.();
      expect(first).toBeDefined();
      expect(second).toBeDefined();
      expect(q.reserve?.()).toBeUndefined(); // both slots are reserved
      // A job enqueued now waits behind the reservations, and while it waits nothing is reserved.
      await q.enqueue('queued');
      second!.release();
      expect(() => second!.release()).toThrow();
      let reservedRan = false;
      first!.start('reserved', async () => {
        await gate;
        reservedRan = true;
      });
      expect(q.reserve?.()).toBeUndefined(); // one runs reserved, the released slot went to 'queued'
      open();
      await q.close(1000);
      expect(reservedRan).toBe(true);
      expect(ran).toEqual(['queued']);
      expect(q.reserve?.()).toBeUndefined(); // closed
    });
  });
}
