// The step records of one async run: which ones the run waits for, which ones are held back and how they
// are written, and their order.
import { describe, expect, it } from 'vitest';
import { StepRecorder } from '../../src/runs/step-recorder.js';
import type { TimedStep } from '../../src/runs/store.js';

const step = (key: string) => ({ key, blockId: key, output: { key } });
const pure = { recomputable: true, endsRun: false };
const effect = { recomputable: false, endsRun: false };
const lastEffect = { recomputable: false, endsRun: true };

/** A write that settles when the test says; each call is one statement of records. */
function held() {
  const calls: { keys: string[]; steps: readonly TimedStep[]; settle: (err?: Error) => void }[] = [];
  const write = (steps: readonly TimedStep[]) => new Promise<void>((resolve, reject) => {
    calls.push({ keys: steps.map((s) => s.step.key), steps, settle: (err) => (err ? reject(err) : resolve()) });
  });
  return { calls, write };
}

const settledWithin = async (p: Promise<unknown>, ms = 50) => Promise.race([p.then(() => true, () => true), new Promise((r) => setTimeout(() => r(false), ms))]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('StepRecorder', () => {
  it('waits for the write of a step replay cannot recompute; a pure step before it goes in the same statement', async () => {
    const durable = held();
    const sent = held();
    const r = new StepRecorder('run-1', durable.write, sent.write, 60_000);

    expect(await settledWithin(r.record(step('start'), pure))).toBe(true);
    expect(durable.calls).toHaveLength(0);

    const fn = r.record(step('fn'), effect);
    expect(await settledWithin(fn)).toBe(false);
    expect(durable.calls.map((c) => c.keys)).toEqual([['start', 'fn']]);
    durable.calls[0].settle();
    await fn;
    expect(durable.calls[0].steps.every((s) => s.executionId === 'run-1')).toBe(true);
    expect(sent.calls).toHaveLength(0);
  });

  it('sends a pure step alone once its delay passes with no other write, and only once', async () => {
    const durable = held();
    const sent = held();
    const r = new StepRecorder('run-2', durable.write, sent.write, 20);
    await r.record(step('start'), pure);
    await r.record(step('check'), pure);
    expect(sent.calls).toHaveLength(0);
    await sleep(80);
    expect(sent.calls.map((c) => c.keys)).toEqual([['start', 'check']]);
    sent.calls[0].settle();
    const fn = r.record(step('fn'), effect);
    expect(durable.calls.map((c) => c.keys)).toEqual([['fn']]);
    durable.calls[0].settle();
    await fn;
    await sleep(40);
    expect(sent.calls).toHaveLength(1);
  });

  it('holds the run\'s last step: dropped when the run ends, committed by flush() when it pauses instead', async () => {
    const durable = held();
    const sent = held();
    const ended = new StepRecorder('run-3', durable.write, sent.write, 60_000);
    await ended.record(step('start'), pure);
    expect(await settledWithin(ended.record(step('end'), lastEffect))).toBe(true);
    ended.discard();
    await ended.flush();
    expect(durable.calls).toHaveLength(0);

    const paused = new StepRecorder('run-4', durable.write, sent.write, 60_000);
    await paused.record(step('start'), pure);
    await paused.record(step('end'), lastEffect);
    const flushed = paused.flush();
    expect(durable.calls.map((c) => c.keys)).toEqual([['start', 'end']]);
    expect(await settledWithin(flushed)).toBe(false);
    durable.calls[0].settle();
    await flushed;
  });

  it('writes nothing for a pure step that ends the run (its final state follows)', async () => {
    const durable = held();
    const sent = held();
    const r = new StepRecorder('run-5', durable.write, sent.write, 20);
    await r.record(step('respond'), { recomputable: true, endsRun: true });
    await r.flush();
    await sleep(60);
    expect(sent.calls).toHaveLength(0);
    expect(durable.calls).toHaveLength(0);
  });

  it('handOver() sends held records once without the retrying write, and never throws', async () => {
    const durable = held();
    const sent = held();
    const r = new StepRecorder('run-6', durable.write, sent.write, 60_000);
    await r.record(step('start'), pure);
    await r.record(step('end'), lastEffect);
    const handed = r.handOver();
    expect(sent.calls.map((c) => c.keys)).toEqual([['start', 'end']]);
    sent.calls[0].settle(new Error('database away'));
    await expect(handed).resolves.toBeUndefined();
    expect(durable.calls).toHaveLength(0);
  });

  it('fails the block when a durable write fails; a lost pure record fails nothing', async () => {
    const durable = held();
    const sent = held();
    const r = new StepRecorder('run-7', durable.write, sent.write, 10);
    await r.record(step('start'), pure);
    await sleep(50);
    sent.calls[0].settle(new Error('database away'));
    await r.flush();
    const fn = r.record(step('fn'), effect);
    durable.calls[0].settle(new Error('database away'));
    await expect(fn).rejects.toThrow('database away');
  });

  it('flush() waits for every record sent after its delay', async () => {
    const sent = held();
    const r = new StepRecorder('run-8', held().write, sent.write, 10);
    await r.record(step('a'), pure);
    await sleep(50);
    await r.record(step('b'), pure);
    await sleep(50);
    expect(sent.calls.map((c) => c.keys)).toEqual([['a'], ['b']]);
    const flushed = r.flush();
    sent.calls[0].settle();
    expect(await settledWithin(flushed)).toBe(false);
    sent.calls[1].settle();
    expect(await settledWithin(flushed)).toBe(true);
  });

  it('stamps records with strictly increasing times to the microsecond, near the clock', async () => {
    const durable = held();
    const r = new StepRecorder('run-9', durable.write, held().write, 60_000);
    const before = Date.now();
    for (let i = 0; i < 50; i++) await r.record(step(`s${i}`), pure);
    const flushed = r.flush();
    const times = durable.calls[0].steps.map((s) => s.finishedAt);
    expect(times).toHaveLength(50);
    for (const t of times) expect(t).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // Same length, so the text order is the time order; 50 records in well under 50 ms share milliseconds.
    for (let i = 1; i < times.length; i++) expect(times[i] > times[i - 1]).toBe(true);
    expect(Date.parse(times[0])).toBeGreaterThanOrEqual(before);
    expect(Date.parse(times[times.length - 1])).toBeLessThanOrEqual(Date.now() + 1);
    durable.calls[0].settle();
    await flushed;
  });
});
