// The composition root's lifecycles (src/lifecycle.ts): start in order, stop in reverse, a stop failure
// logged and the rest still stopped.
import { describe, expect, it } from 'vitest';
import { Lifecycles } from '../../src/lifecycle.js';

function recording() {
  const events: string[] = [];
  const errors: Array<{ lifecycle: unknown; message: string }> = [];
  const log = { error: (fields: { lifecycle?: unknown }, message: string) => errors.push({ lifecycle: fields.lifecycle, message }) };
  return { events, errors, lifecycles: new Lifecycles(log as never) };
}

describe('lifecycles', () => {
  it('start in the order added and stop in reverse, entries without a start or a stop included', async () => {
    const { events, lifecycles } = recording();
    lifecycles.add({ name: 'a', start: () => { events.push('start a'); }, stop: () => { events.push('stop a'); } });
    lifecycles.add({ name: 'b', stop: async () => { events.push('stop b'); } });
    lifecycles.add({ name: 'c', start: async () => { events.push('start c'); } });
    lifecycles.add({ name: 'd', start: () => { events.push('start d'); }, stop: () => { events.push('stop d'); } });
    expect(lifecycles.names).toEqual(['a', 'b', 'c', 'd']);
    await lifecycles.start();
    await lifecycles.stop();
    expect(events).toEqual(['start a', 'start c', 'start d', 'stop d', 'stop b', 'stop a']);
  });

  it('a failing stop is logged with its name and the ones before it still stop; stopping twice stops once', async () => {
    const { events, errors, lifecycles } = recording();
    lifecycles.add({ name: 'first', stop: () => { events.push('stop first'); } });
    lifecycles.add({ name: 'broken', stop: async () => { throw new Error('boom'); } });
    lifecycles.add({ name: 'last', stop: () => { events.push('stop last'); } });
    await Promise.all([lifecycles.stop(), lifecycles.stop()]);
    await lifecycles.stop();
    expect(events).toEqual(['stop last', 'stop first']);
    expect(errors).toEqual([{ lifecycle: 'broken', message: 'stopping broken failed' }]);
  });

  it('a failing start is thrown and the entries after it do not start', async () => {
    const { events, lifecycles } = recording();
    lifecycles.add({ name: 'ok', start: () => { events.push('start ok'); } });
    lifecycles.add({ name: 'broken', start: () => { throw new Error('no port'); } });
    lifecycles.add({ name: 'never', start: () => { events.push('start never'); } });
    await expect(lifecycles.start()).rejects.toThrow('no port');
    expect(events).toEqual(['start ok']);
  });
});
