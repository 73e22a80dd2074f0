import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/db/group-commit.js';

/** A writer whose commits finish when the test says, recording the batches it was given. */
function gatedWriter(failBatchWith?: (items: readonly number[]) => boolean) {
  const batches: number[][] = [];
  const singles: number[] = [];
  let release: () => void = () => undefined;
  let gate = new Promise<void>((r) => (release = r));
  const commit = new GroupCommit<number, string>({
    writeBatch: async (items) => {
      batches.push([...items]);
      await gate;
      if (failBatchWith?.(items)) throw new Error('batch failed');
      return items.map((n) => `ok ${n}`);
    },
    writeOne: async (n) => {
      singles.push(n);
      await gate;
      if (n === 13) throw new Error('13 cannot be written');
      return `ok ${n}`;
    },
    maxBatch: 3,
  });
  return {
    commit, batches, singles,
    open() {
      release();
      gate = Promise.resolve();
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
});
