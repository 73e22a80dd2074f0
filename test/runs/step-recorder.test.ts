// The step records of one async run: which ones the run waits for, and their order.
import { describe, expect, it } from 'vitest';
import { StepRecorder } from '../../src/runs/step-recorder.js';
import type { TimedStep } from '../../src/runs/store.js';

const step = (key: string) => ({ key, blockId: key, output: { key } });

/** A write that settles when the test says. */
function held() {
  const calls: { step: TimedStep; settle: (err?: Error) => void }[] = [];
  const write = (s: TimedStep) => new Promise<void>((resolve, reject) => {
    calls.push({ step: s, settle: (err) => (err ? reject(err) : resolve()) });
  });
  return { calls, write };
}

const settledWithin = async (p: Promise<unknown>) => Promise.race([p.then(() => true, () => true), new Promise((r) => setTimeout(() => r(false), 50))]);

describe('StepRecorder', () => {
  it('waits for the write of a step replay cannot recompute, and not for one it can', async () => {
    const durable = held();
    const sent = held();
    const r = new StepRecorder('run-1', durable.write, sent.write);

    expect(await settledWithin(r.record(step('start'), { recomputable: true, endsRun: false }))).toBe(true);
    expect(sent.calls.map((c) => c.step.step.key)).toEqual(['start']);
    expect(durable.calls).toHaveLength(0);

    const fn = r.record(step('fn'), { recomputable: false, endsRun: false });
    expect(await settledWithin(fn)).toBe(false);
    expect(durable.calls.map((c) => c.step.step.key)).toEqual(['fn']);
    durable.calls[0].settle();
    await fn;
    expect(durable.calls[0].step.executionId).toBe('run-1');
  });

  it('writes nothing for a pure step that ends the run (its final state follows)', async () => {
    const durable = held();
    const sent = held();
    const r = new StepRecorder('run-5', durable.write, sent.write);
    await r.record(step('respond'), { recomputable: true, endsRun: true });
    expect(sent.calls).toHaveLength(0);
    expect(durable.calls).toHaveLength(0);
    // A step that ends the run but is not pure is still committed first.
    const fn = r.record(step('end'), { recomputable: false, endsRun: true });
    expect(durable.calls.map((c) => c.step.step.key)).toEqual(['end']);
    durable.calls[0].settle();
    await fn;
  });

  it('fails the block when a durable write fails; a lost recomputable record fails nothing', async () => {
    const durable = held();
    const sent = held();
    const r = new StepRecorder('run-2', durable.write, sent.write);
    await r.record(step('start'), { recomputable: true, endsRun: false });
    sent.calls[0].settle(new Error('database away'));
    await r.settled();
    const fn = r.record(step('fn'), { recomputable: false, endsRun: false });
    durable.calls[0].settle(new Error('database away'));
    await expect(fn).rejects.toThrow('database away');
  });

  it('settled() waits for every record sent without waiting', async () => {
    const sent = held();
    const r = new StepRecorder('run-3', held().write, sent.write);
    await r.record(step('a'), { recomputable: true, endsRun: false });
    await r.record(step('b'), { recomputable: true, endsRun: false });
    const settled = r.settled();
    sent.calls[0].settle();
    expect(await settledWithin(settled)).toBe(false);
    sent.calls[1].settle();
    expect(await settledWithin(settled)).toBe(true);
  });

  it('stamps records with strictly increasing times to the microsecond, near the clock', async () => {
    const sent = held();
    const r = new StepRecorder('run-4', held().write, sent.write);
    const before = Date.now();
    for (let i = 0; i < 50; i++) await r.record(step(`s${i}`), { recomputable: true, endsRun: false });
    const times = sent.calls.map((c) => c.step.finishedAt);
    for (const t of times) expect(t).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // Same length, so the text order is the time order; 50 records in well under 50 ms share milliseconds.
    for (let i = 1; i < times.length; i++) expect(times[i] > times[i - 1]).toBe(true);
    expect(Date.parse(times[0])).toBeGreaterThanOrEqual(before);
    expect(Date.parse(times[times.length - 1])).toBeLessThanOrEqual(Date.now() + 1);
  });
});
