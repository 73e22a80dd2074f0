// The palette's rule (web/src/editor/graph.ts unavailableReason): at most one block of each entry type,
// as the server's definition check says; everything else can always be added.
import { describe, expect, it } from 'vitest';
import type { BlockDef } from '../../web/src/api/workflows';
import { unavailableReason } from '../../web/src/editor/graph';

const start: BlockDef = { id: 'start', type: 'start', name: 'Begin' };

describe('unavailableReason', () => {
  it('refuses a second Start block and names the one there is', () => {
    expect(unavailableReason('start', [start])).toBe('This workflow already has a Start block ("Begin"); a workflow takes only one.');
  });

  it('applies per entry type: a webhook or schedule may join a start, but not a second of its own', () => {
    expect(unavailableReason('webhook', [start])).toBeNull();
    expect(unavailableReason('schedule', [start])).toBeNull();
    const hook: BlockDef = { id: 'hook', type: 'webhook', name: 'Incoming' };
    expect(unavailableReason('webhook', [start, hook])).toMatch(/already has a Webhook block \("Incoming"\)/);
    const tick: BlockDef = { id: 'tick', type: 'schedule', name: 'Nightly' };
    expect(unavailableReason('schedule', [tick])).toMatch(/already has a Schedule block \("Nightly"\)/);
  });

  it('sees an entry block misplaced inside a container', () => {
    const loop: BlockDef = { id: 'loop', type: 'loop', name: 'Each', blocks: [start] };
    expect(unavailableReason('start', [loop])).not.toBeNull();
  });

  it('allows a Start block again once there is none, and never limits other types', () => {
    expect(unavailableReason('start', [])).toBeNull();
    const fns: BlockDef[] = [{ id: 'f', type: 'function', name: 'F' }];
    expect(unavailableReason('function', fns)).toBeNull();
    expect(unavailableReason('loop', [start])).toBeNull();
  });
});
