import { describe, expect, it } from 'vitest';
import { FairPool } from '../../src/sandbox/fair-pool.js';

// The pool's sharing rules (docs/architecture.md, Where limits are enforced: sandbox memory and
// time), checked by the order slots are handed out rather than by how long calls take.
interface Slot { id: number; disposed: boolean }

function pool(size: number) {
  let next = 0;
  const created: Slot[] = [];
  const p = new FairPool<Slot>({
    size,
    createSlot: () => {
      const s = { id: next++, disposed: false };
      created.push(s);
      return s;
    },
    disposeSlot: (s) => { s.disposed = true; },
    prepareSlot: () => undefined,
    abortError: () => new Error('aborted'),
  });
  return { p, created };
}

/** Records the tenant of each granted call in grant order. */
function track(p: FairPool<Slot>) {
  const granted: { tenant: string; slot: Slot }[] = [];
  const ask = (tenant: string) => p.acquire(tenant).then((slot) => { granted.push({ tenant, slot }); return slot; });
  return { granted, ask };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('FairPool', () => {
  it('a lone tenant may hold every slot at once', async () => {
    const { p } = pool(2);
    const { granted, ask } = track(p);
    void ask('alone');
    void ask('alone');
    void ask('alone');
    await flush();
    expect(granted.map((g) => g.tenant)).toEqual(['alone', 'alone']); // both slots, the third waits
    p.release(granted[0].slot);
    await flush();
    expect(granted).toHaveLength(3);
  });

  it('waiters are served round-robin across tenants, FIFO within one', async () => {
    const { p } = pool(2); // share: 1
    const { granted, ask } = track(p);
    for (let i = 0; i < 6; i++) void ask('a');
    await flush();
    expect(granted.map((g) => g.tenant)).toEqual(['a', 'a']); // alone, a takes the whole pool
    for (let i = 0; i < 3; i++) void ask('b');
    await flush();
    // b is under its share and every slot is held by a, over its share: b borrows an extra slot.
    expect(granted.map((g) => g.tenant)).toEqual(['a', 'a', 'b']);
    // Give slots back oldest first, one at a time, and watch who gets each.
    let released = 0;
    while (granted.length < 9) {
      p.release(granted[released++].slot);
      await flush();
    }
    const order = granted.map((g) => g.tenant).join('');
    // Turns alternate while both wait; a's last calls run once b has none left.
    expect(order).toBe('aabababaa');
  });

  it('a tenant under its share borrows an extra slot from a pool held over share; the extra leaves on release', async () => {
    const { p } = pool(4); // share: 2
    const { granted, ask } = track(p);
    for (let i = 0; i < 4; i++) void ask('a');
    void ask('a');
    void ask('b');
    await flush();
    // a's fifth call waits (another tenant is waiting and a is over its share); b borrows.
    expect(granted.map((g) => g.tenant)).toEqual(['a', 'a', 'a', 'a', 'b']);
    const extra = granted[4].slot;
    p.release(extra);
    expect(p.isRetired(extra)).toBe(true); // the extra slot leaves the pool when given back
    expect(extra.disposed).toBe(true);
  });

  it('a waiting call is rejected when its signal aborts, and does not take a slot later', async () => {
    const { p } = pool(1);
    const { granted, ask } = track(p);
    void ask('a');
    await flush();
    const ac = new AbortController();
    const waiting = p.acquire('a', ac.signal);
    ac.abort();
    await expect(waiting).rejects.toThrow('aborted');
    p.release(granted[0].slot);
    void ask('b');
    await flush();
    expect(granted.map((g) => g.tenant)).toEqual(['a', 'b']);
  });
});
