import { describe, expect, it } from 'vitest';
import type { JobQueue } from '../../src/queue/port.js';

/** One suite every JobQueue adapter passes. */
export function queueConformance(name: string, make: (concurrency: number) => JobQueue): void {
  describe(`JobQueue conformance: ${name}`, () => {
    it('delivers every enqueued job exactly once, at most `concurrency` at a time', async () => {
      const q = make(3);
      const seen: string[] = [];
      let running = 0;
      let peak = 0;
      const done = new Promise<void>((resolve) => {
        q.work(async (id) => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 5));
          seen.push(id);
          running--;
          if (seen.length === 30) resolve();
        });
      });
      for (let i = 0; i < 30; i++) await q.enqueue(`job:${i}`);
      await done;
      await q.close(1000);
      expect(seen.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `job:${i}`).sort());
      expect(peak).toBeLessThanOrEqual(3);
      expect(peak).toBeGreaterThan(1);
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
      const started = new Promise<void>((resolve) => {
        q.work(async () => {
          resolve();
          await new Promise((r) => setTimeout(r, 1200));
          finished = true;
        });
      });
      await q.enqueue('slow');
      await started;
      const t0 = Date.now();
      await q.close(100); // the grace expires while the job runs
      expect(Date.now() - t0).toBeLessThan(1000);
      expect(finished).toBe(false);
      await q.close(10_000); // the second call waits for it again
      expect(finished).toBe(true);
      const t1 = Date.now();
      await q.close(10_000); // nothing left: returns at once
      expect(Date.now() - t1).toBeLessThan(1000);
    });

    it('close with nothing running returns promptly, also before work()', async () => {
      const idle = make(1);
      const t0 = Date.now();
      await idle.close(10_000);
      await idle.close(10_000);
      expect(Date.now() - t0).toBeLessThan(2000);
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
  });
}
