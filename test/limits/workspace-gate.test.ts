import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/http/errors.js';
import { WorkspaceGate } from '../../src/limits/workspace-gate.js';

/** A scan that ends when told to. */
function held<T>(value: T) {
  let release!: () => void;
  let fail!: (err: Error) => void;
  const done = new Promise<T>((resolve, reject) => {
    release = () => resolve(value);
    fail = reject;
  });
  return { scan: () => done, release, fail };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('WorkspaceGate', () => {
  it('runs at most perWorkspace scans of a workspace at once, the rest in the order they came', async () => {
    const gate = new WorkspaceGate(2, 10);
    const scans = [held(1), held(2), held(3), held(4)];
    const started: number[] = [];
    const results = scans.map((s, i) => gate.run('ws', () => {
      started.push(i);
      return s.scan();
    }));
    await tick();
    expect(started).toEqual([0, 1]);
    expect(gate.load('ws')).toEqual({ running: 2, waiting: 2 });
    scans[1].release();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    scans[0].fail(new Error('boom')); // a failed scan hands its place on too
    await expect(results[0]).rejects.toThrow('boom');
    await tick();
    expect(started).toEqual([0, 1, 2, 3]);
    scans[2].release();
    scans[3].release();
    expect(await Promise.all(results.slice(1))).toEqual([2, 3, 4]);
    expect(gate.load('ws')).toEqual({ running: 0, waiting: 0 });
  });

  it('does not hold one workspace behind another', async () => {
    const gate = new WorkspaceGate(1, 10);
    const a = held('a');
    const first = gate.run('a', a.scan);
    expect(await gate.run('b', async () => 'b')).toBe('b');
    a.release();
    expect(await first).toBe('a');
  });

  it('answers 429 once maxWaiting scans wait, and runs nothing for it', async () => {
    const gate = new WorkspaceGate(1, 2);
    const s = held(0);
    const running = [gate.run('ws', s.scan), gate.run('ws', s.scan), gate.run('ws', s.scan)];
    let ran = false;
    const refused = await gate.run('ws', async () => (ran = true)).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(HttpError);
    expect((refused as HttpError).status).toBe(429);
    expect((refused as HttpError).headers['Retry-After']).toBe('1');
    expect(ran).toBe(false);
    s.release();
    await Promise.all(running);
    expect(gate.load('ws')).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses a workspace\'s scans for the cool-down after one of them ran out of the query timeout, and only that workspace\'s', async () => {
    let now = 1_000_000;
    const gate = new WorkspaceGate(2, 10, 60_000, () => now);
    const timedOut = new HttpError(503, 'The query ran past 10000 ms and was stopped', { code: 'QUERY_TIMEOUT' });
    await expect(gate.run('ws', () => Promise.reject(timedOut))).rejects.toBe(timedOut);
    // Another failure is not a reason to cool down.
    await expect(gate.run('other', () => Promise.reject(new HttpError(400, 'bad filter')))).rejects.toMatchObject({ status: 400 });
    expect(await gate.run('other', () => Promise.resolve('runs'))).toBe('runs');
    now += 1_500;
    const refused = await gate.run('ws', () => Promise.resolve('never')).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({ status: 429, extra: { code: 'QUERY_COOLDOWN', retryAfterSeconds: 59 }, headers: { 'Retry-After': '59' } });
    now += 58_499;
    await expect(gate.run('ws', () => Promise.resolve('never'))).rejects.toMatchObject({ status: 429 });
    now += 1;
    expect(await gate.run('ws', () => Promise.resolve('runs again'))).toBe('runs again');
  });

  it('has no cool-down by default', async () => {
    const gate = new WorkspaceGate(1, 10);
    const timedOut = new HttpError(503, 'stopped', { code: 'QUERY_TIMEOUT' });
    await expect(gate.run('ws', () => Promise.reject(timedOut))).rejects.toBe(timedOut);
    expect(await gate.run('ws', () => Promise.resolve(1))).toBe(1);
  });
});
