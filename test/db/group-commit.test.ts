import { afterEach, describe, expect, it, vi } from 'vitest';
import { GroupCommit } from '../../src/db/group-commit.js';

/** A writer whose commits finish when the test says, recording the batches it was given. */
function gatedWriter(failBatchWith?: (items: readonly number[]) => boolean, windowMs?: number) {
  const batches: number[][] = [];
  const singles: number[] = [];
  /** Every write as it starts, batches and singles, in order. */
  const starts: number[][] = [];
  let release: () => void = () => undefined;
  let gate = new Promise<void>((r) => (release = r));
  const commit = new GroupCommit<number, string>({
    writeBatch: async (items) => {
      batches.push([...items]);
      starts.push([...items]);
      await gate;
      if (failBatchWith?.(items)) throw new Error('batch failed');
      return items.map((n) => `ok ${n}`);
    },
    writeOne: async (n) => {
      singles.push(n);
      starts.push([n]);
      await gate;
      if (n === 13) throw new Error('13 cannot be written');
      return `ok ${n}`;
    },
    maxBatch: 3,
    windowMs,
  });
  return {
    commit, batches, singles, starts,
    open() {
      release();
      gate = Promise.resolve();
    },
    /** Commits from now on wait for the next `open()`. */
    close() {
      gate = new Promise<void>((r) => (release = r));
    },
  };
}

describe('GroupCommit', () => {
  it('a write with nothing in flight goes alone; writes arriving meanwhile share the next commits, in order, at most maxBatch each', async () => {
    const w = gatedWriter();
    const first = w.commit.submit(1);
    const rest = [2, 3, 4, 5, 6].map((n) => w.commit.submit(n));
    await new Promise((r) => setImmediate(r));
    expect(w.singles).toEqual([1]); // the first write started at once, alone
    expect(w.batches).toEqual([]); // the others wait for its commit
    w.open();
    expect(await first).toBe('ok 1');
    expect(await Promise.all(rest)).toEqual(['ok 2', 'ok 3', 'ok 4', 'ok 5', 'ok 6']);
    expect(w.batches).toEqual([[2, 3, 4], [5, 6]]);
  });

  it('a failed batch is written again item by item: only the item at fault fails', async () => {
    const w = gatedWriter((items) => items.includes(13));
    const first = w.commit.submit(1);
    const batch = [12, 13, 14].map((n) => w.commit.submit(n).catch((err: Error) => err.message));
    w.open();
    await first;
    expect(await Promise.all(batch)).toEqual(['ok 12', '13 cannot be written', 'ok 14']);
    expect(w.batches).toEqual([[12, 13, 14]]);
    expect(w.singles).toEqual([1, 12, 13, 14]);
  });

  it('keeps going after a failure: later writes are committed', async () => {
    const w = gatedWriter();
    w.open();
    await expect(w.commit.submit(13)).rejects.toThrow('13 cannot be written');
    await expect(w.commit.submit(7)).resolves.toBe('ok 7');
  });

  describe('with a window', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /** A writer with a window whose commits finish at once unless closed. */
    function windowed(windowMs: number) {
      const w = gatedWriter(undefined, windowMs);
      w.open();
      return w;
    }

    it('a write waits for its window, and writes arriving meanwhile share its batch', async () => {
      vi.useFakeTimers();
      const w = windowed(50);
      const done = [w.commit.submit(1)];
      await vi.advanceTimersByTimeAsync(20);
      done.push(w.commit.submit(2));
      await vi.advanceTimersByTimeAsync(29);
      expect(w.starts).toEqual([]); // 49 ms after the first write: nothing written yet
      await vi.advanceTimersByTimeAsync(1);
      expect(w.starts).toEqual([[1, 2]]);
      expect(await Promise.all(done)).toEqual(['ok 1', 'ok 2']);
    });

    it('under steady load, writes arriving during a commit wait for their own window instead of following it at once', async () => {
      vi.useFakeTimers();
      const w = windowed(50);
      const done = [w.commit.submit(1)];
      w.close();
      await vi.advanceTimersByTimeAsync(50);
      expect(w.starts).toEqual([[1]]); // its commit is under way (gated)
      done.push(w.commit.submit(2)); // t = 50
      await vi.advanceTimersByTimeAsync(10);
      done.push(w.commit.submit(3)); // t = 60
      await vi.advanceTimersByTimeAsync(10);
      w.open(); // t = 70: the first commit ends
      await vi.advanceTimersByTimeAsync(29);
      expect(w.starts).toEqual([[1]]); // t = 99: 2 has waited 49 ms
      await vi.advanceTimersByTimeAsync(1);
      expect(w.starts).toEqual([[1], [2, 3]]); // t = 100: 2's window is over, 3 goes with it
      expect(await Promise.all(done)).toEqual(['ok 1', 'ok 2', 'ok 3']);
    });

    it('a write whose window ended during a commit goes as soon as that commit ends', async () => {
      vi.useFakeTimers();
      const w = windowed(50);
      const first = w.commit.submit(1);
      w.close();
      await vi.advanceTimersByTimeAsync(50);
      const second = w.commit.submit(2); // t = 50, its window ends at 100
      await vi.advanceTimersByTimeAsync(70);
      expect(w.starts).toEqual([[1]]);
      w.open(); // t = 120
      await vi.advanceTimersByTimeAsync(0);
      expect(w.starts).toEqual([[1], [2]]);
      expect([await first, await second]).toEqual(['ok 1', 'ok 2']);
    });

    it('a full batch goes at once, and flush writes what waits without its window', async () => {
      vi.useFakeTimers();
      const w = windowed(50);
      const full = [1, 2, 3].map((n) => w.commit.submit(n));
      await vi.advanceTimersByTimeAsync(0);
      expect(w.starts).toEqual([[1, 2, 3]]); // maxBatch is 3
      const late = w.commit.submit(4);
      await w.commit.flush();
      expect(w.starts).toEqual([[1, 2, 3], [4]]);
      expect(await Promise.all([...full, late])).toEqual(['ok 1', 'ok 2', 'ok 3', 'ok 4']);
      expect(w.commit.pending).toBe(0);
    });
  });

  it('hands the next batch to the writer before the last batch\'s submitters resume (their answers need not hold the database up)', async () => {
    const w = gatedWriter();
    let startedWhenFirstResumed: number[][] = [];
    const first = w.commit.submit(1).then(() => {
      startedWhenFirstResumed = w.starts.map((s) => [...s]);
    });
    await new Promise((r) => setImmediate(r));
    const rest = [2, 3].map((n) => w.commit.submit(n));
    w.open();
    await first;
    expect(startedWhenFirstResumed).toEqual([[1], [2, 3]]);
    expect(await Promise.all(rest)).toEqual(['ok 2', 'ok 3']);
  });
});
