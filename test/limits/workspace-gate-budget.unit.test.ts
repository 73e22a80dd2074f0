import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/http/errors.js';
import { type ScanMeter, WorkspaceGate } from '../../src/limits/workspace-gate.js';

// Besides the cool-down after a scan that ran out of the query timeout, a workspace's scans are refused once the
// time they held the database passes a budget: one query timeout (the cool-down over 6) at once, given back at a
// sixth of the time (docs/architecture.md, Tables: bounded statements). The clock is the test's.

const COOLDOWN = 60_000; // a 10 s query timeout: a budget of 10 s, drained at 1 ms every 6 ms

function setup() {
  const clock = { now: 1_000_000 };
  const gate = new WorkspaceGate(2, 10, COOLDOWN, () => clock.now);
  /** A scan that waits `waitMs` for the database, then holds it `heldMs`. */
  const scan = (ws: string, heldMs: number, waitMs = 0) => gate.run(ws, async (meter: ScanMeter) => {
    clock.now += waitMs;
    meter.holding();
    clock.now += heldMs;
    return 'done';
  });
  return { clock, gate, scan };
}

async function refusal(p: Promise<unknown>): Promise<HttpError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(HttpError);
  return err as HttpError;
}

describe('WorkspaceGate: the budget of database time', () => {
  it('refuses a workspace whose scans held the database past the budget, until enough of it drained, and only that workspace', async () => {
    const { clock, scan } = setup();
    expect(await scan('ws', 10_000)).toBe('done');
    expect(await scan('ws', 0)).toBe('done'); // at the budget, not past it
    expect(await scan('ws', 3_000)).toBe('done'); // 10 s less the 0.5 s drained while it ran, plus 3 s: 12.5 s
    const refused = await refusal(scan('ws', 1));
    // 2.5 s past the budget, given back in 15 s.
    expect(refused).toMatchObject({ status: 429, extra: { code: 'QUERY_COOLDOWN', retryable: true, retryAfterSeconds: 15 }, headers: { 'Retry-After': '15' } });
    expect(refused.message).toMatch(/held the database for more than 10 s of late \(a workspace may hold it for 1\/6 of the time on average\); its queries are refused for 15 s more/);
    expect(await scan('other', 0)).toBe('done');
    clock.now += 14_999;
    expect(await refusal(scan('ws', 1))).toMatchObject({ extra: { retryAfterSeconds: 1 } });
    clock.now += 1;
    expect(await scan('ws', 1)).toBe('done');
  });

  it('charges the time from holding() to the end, not the wait for the database before it', async () => {
    const { clock, gate, scan } = setup();
    // 60 s each waiting behind other tenants' statements, 1 ms holding the database: far under the budget.
    for (let i = 0; i < 5; i++) expect(await scan('ws', 1, 60_000)).toBe('done');
    // A scan that never says it holds the database (a knowledge search) is charged nothing.
    for (let i = 0; i < 3; i++) {
      expect(await gate.run('ws', async () => {
        clock.now += 20_000;
        return 'unmetered';
      })).toBe('unmetered');
    }
    expect(await scan('ws', 1)).toBe('done');
  });

  it('charges a scan that failed as it held the database, but not one the timeout stopped (its cool-down stands for it)', async () => {
    const { clock, gate } = setup();
    const failing = (err: Error, heldMs: number) => gate.run('ws', async (meter) => {
      meter.holding();
      clock.now += heldMs;
      throw err;
    });
    const timedOut = new HttpError(503, 'The query ran past 10000 ms and was stopped', { code: 'QUERY_TIMEOUT' });
    // 30 s from its first answer to its error (on the embedded database, the restart after it too).
    await expect(failing(timedOut, 30_000)).rejects.toBe(timedOut);
    const cooling = await refusal(gate.run('ws', async () => 'never'));
    expect(cooling.message).toMatch(/ran past its time and was stopped; its queries are refused for 60 s more/);
    clock.now += COOLDOWN;
    // The cool-down is over, and the 30 s were not charged besides (10 s of them would be left).
    expect(await gate.run('ws', async () => 'runs')).toBe('runs');
    await expect(failing(new Error('boom'), 10_001)).rejects.toThrow('boom');
    expect(await refusal(gate.run('ws', async () => 'never'))).toMatchObject({ status: 429, extra: { code: 'QUERY_COOLDOWN' } });
  });

  it('refuses a scan that waited its turn when the budget ran out meanwhile', async () => {
    const { clock, gate } = setup();
    const deferred = () => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      return { promise, resolve };
    };
    const a = deferred();
    const b = deferred();
    const first = gate.run('ws', async (meter) => {
      meter.holding();
      await a.promise;
      clock.now += 20_000;
      return 'first';
    });
    const second = gate.run('ws', async () => {
      await b.promise;
      return 'second';
    });
    let ran = false;
    const third = gate.run('ws', async () => ((ran = true), 'third')); // waits: two run at a time
    await new Promise((r) => setImmediate(r));
    expect(gate.load('ws')).toEqual({ running: 2, waiting: 1 });
    a.resolve();
    expect(await first).toBe('first');
    expect(await refusal(third)).toMatchObject({ status: 429, extra: { code: 'QUERY_COOLDOWN' } });
    expect(ran).toBe(false);
    b.resolve();
    expect(await second).toBe('second');
    expect(gate.load('ws')).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses a scan of the same burst at holding() when the scans before it used the budget or ran out of time', async () => {
    // Admitted together (nothing held yet), the burst's scans get the embedded database one after another.
    for (const [first, expected] of [
      [{ heldMs: 12_000 }, /held the database for more than 10 s/],
      [{ heldMs: 10_000, error: new HttpError(503, 'The query ran past 10000 ms and was stopped', { code: 'QUERY_TIMEOUT' }) }, /ran past its time/],
    ] as const) {
      const { clock, gate } = setup();
      let release!: () => void;
      const turn = new Promise<void>((r) => (release = r));
      let queried = false;
      const waiting = gate.run('ws', async (meter) => {
        await turn; // the database's lock, held by the first scan
        meter.holding();
        queried = true;
        return 'queried';
      });
      const holder = gate.run('ws', async (meter) => {
        meter.holding();
        clock.now += first.heldMs;
        if ('error' in first) throw first.error;
        return 'held';
      });
      await holder.catch(() => undefined);
      release();
      const refused = await refusal(waiting);
      expect(refused).toMatchObject({ status: 429, extra: { code: 'QUERY_COOLDOWN' } });
      expect(refused.message).toMatch(expected);
      expect(queried).toBe(false);
      expect(gate.load('ws')).toEqual({ running: 0, waiting: 0 });
    }
  });

  it('keeps the Retry-After it announced, though a barely-over level drains below the budget sooner', async () => {
    const { clock, scan } = setup();
    expect(await scan('ws', 10_006)).toBe('done'); // 6 ms over: drained in 36 ms
    expect(await refusal(scan('ws', 1))).toMatchObject({ status: 429, extra: { code: 'QUERY_COOLDOWN', retryAfterSeconds: 1 } });
    clock.now += 500;
    expect(await refusal(scan('ws', 1))).toMatchObject({ status: 429, extra: { retryAfterSeconds: 1 }, headers: { 'Retry-After': '1' } });
    clock.now += 500;
    expect(await scan('ws', 1)).toBe('done');
  });

  it('has no budget without a cool-down', async () => {
    const clock = { now: 0 };
    const gate = new WorkspaceGate(1, 10, 0, () => clock.now);
    for (let i = 0; i < 5; i++) {
      expect(await gate.run('ws', async (meter) => {
        meter.holding();
        clock.now += 60_000;
        return i;
      })).toBe(i);
    }
  });
});
