// The editor's tree operations (web/src/editor/graph.ts): lookups, immutable edits, unique ids and names,
// handles, and the layout of blocks saved without positions.
import { describe, expect, it } from 'vitest';
import type { BlockDef, Definition } from '../../web/src/api/workflows';
import {
  branchHandles, containersOf, edgeFromHandle, edgeKey, freeSpot, indexBlocks, insertBlock, layoutMissing, normalizeName,
  removeBlocks, sourceHandleOf, uniqueId, uniqueName, updateBlock, upstreamOf, NODE_HEIGHT,
} from '../../web/src/editor/graph';

const fn = (id: string, extra: Partial<BlockDef> = {}): BlockDef => ({ id, type: 'function', name: id, config: { code: 'return {}' }, ...extra });
const tree = (): BlockDef[] => [
  { id: 'start', type: 'start', name: 'Start' },
  { id: 'loop', type: 'loop', name: 'Each', blocks: [fn('inner'), { id: 'par', type: 'parallel', name: 'Par', blocks: [fn('deep')] }] },
  fn('after'),
];

describe('indexBlocks', () => {
  it('finds every block with its container and depth', () => {
    const index = indexBlocks(tree());
    expect([...index.keys()]).toEqual(['start', 'loop', 'inner', 'par', 'deep', 'after']);
    expect(index.get('deep')).toMatchObject({ parentId: 'par', depth: 2 });
    expect(index.get('after')).toMatchObject({ parentId: null, depth: 0 });
  });
});

describe('edits', () => {
  it('updateBlock changes a nested block and copies only its ancestors', () => {
    const before = tree();
    const after = updateBlock(before, 'deep', (b) => ({ ...b, name: 'Renamed' }));
    expect(indexBlocks(after).get('deep')?.block.name).toBe('Renamed');
    expect(indexBlocks(before).get('deep')?.block.name).toBe('deep');
    expect(after[0]).toBe(before[0]);
    expect(after[2]).toBe(before[2]);
    expect(after[1]).not.toBe(before[1]);
  });

  it('removeBlocks drops a container with everything inside and reports every id', () => {
    const { blocks, removed } = removeBlocks(tree(), new Set(['loop']));
    expect(blocks.map((b) => b.id)).toEqual(['start', 'after']);
    expect([...removed].sort()).toEqual(['deep', 'inner', 'loop', 'par']);
  });

  it('insertBlock adds at the top level or at the end of a container', () => {
    expect(insertBlock(tree(), fn('top'), null).map((b) => b.id)).toEqual(['start', 'loop', 'after', 'top']);
    const inPar = insertBlock(tree(), fn('x'), 'par');
    expect(indexBlocks(inPar).get('x')).toMatchObject({ parentId: 'par', depth: 2 });
  });
});

describe('names and ids', () => {
  it('normalizes names the way references use them', () => {
    expect(normalizeName('My Block.v2')).toBe('myblockv2');
  });

  it('uniqueId counts up from the cleaned type', () => {
    expect(uniqueId('Function', new Set())).toBe('function');
    expect(uniqueId('function', new Set(['function', 'function2']))).toBe('function3');
    expect(uniqueId('!!!', new Set())).toBe('block');
  });

  it('uniqueName is unique after normalization', () => {
    expect(uniqueName('Function', new Set(['function', 'function2']))).toBe('Function 3');
    expect(uniqueName('HTTP', new Set(['agent']))).toBe('HTTP');
  });
});

describe('handles', () => {
  it('lists branch handles of conditions and routers only', () => {
    expect(branchHandles({ id: 'c', type: 'condition', name: 'C', config: { conditions: [{ id: 'yes' }, { id: 'else' }, {}] } })).toEqual(['yes', 'else']);
    expect(branchHandles({ id: 'r', type: 'router', name: 'R', config: { routes: [{ id: 'a' }] } })).toEqual(['a']);
    expect(branchHandles(fn('f'))).toEqual([]);
  });

  it('turns edges into handles and back', () => {
    for (const edge of [{ from: 'a', to: 'b' }, { from: 'a', to: 'b', on: 'error' as const }, { from: 'a', to: 'b', branch: 'yes' }]) {
      expect(edgeFromHandle(edge.from, edge.to, sourceHandleOf(edge))).toEqual(edge);
    }
    expect(edgeKey({ from: 'a', to: 'b', branch: 'yes' })).toBe('a->b:branch:yes');
    expect(edgeFromHandle('a', 'b', null)).toEqual({ from: 'a', to: 'b' });
  });
});

describe('layoutMissing', () => {
  it('places unpositioned blocks in columns by their distance from the entry', () => {
    const def: Definition = { blocks: [fn('c'), { id: 'start', type: 'start', name: 'Start' }, fn('b'), fn('b2')], edges: [{ from: 'start', to: 'b' }, { from: 'start', to: 'b2' }, { from: 'b', to: 'c' }] };
    const pos = new Map(layoutMissing(def).blocks.map((b) => [b.id, b.position!]));
    expect(pos.get('start')!.x).toBeLessThan(pos.get('b')!.x);
    expect(pos.get('b')!.x).toBe(pos.get('b2')!.x);
    expect(pos.get('b2')!.y).toBeGreaterThanOrEqual(pos.get('b')!.y + NODE_HEIGHT);
    expect(pos.get('b')!.x).toBeLessThan(pos.get('c')!.x);
  });

  it('keeps saved positions and survives a cycle', () => {
    const def: Definition = { blocks: [fn('a', { position: { x: 5, y: 7 } }), fn('b'), fn('c')], edges: [{ from: 'b', to: 'c' }, { from: 'c', to: 'b' }] };
    const out = layoutMissing(def).blocks;
    expect(out[0].position).toEqual({ x: 5, y: 7 });
    expect(out.every((b) => b.position && Number.isFinite(b.position.x) && Number.isFinite(b.position.y))).toBe(true);
  });
});

describe('upstreamOf and containersOf', () => {
  const def: Definition = {
    blocks: [
      { id: 'start', type: 'start', name: 'Start' }, fn('a'),
      { id: 'loop', type: 'loop', name: 'Each', blocks: [fn('first'), fn('second')] },
      fn('side'),
    ],
    edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'loop' }, { from: 'first', to: 'second' }, { from: 'start', to: 'side' }],
  };
  const index = indexBlocks(def.blocks);

  it('a block inside a container sees its siblings upstream and what flows into the container', () => {
    expect([...upstreamOf(def, 'second', index)].sort()).toEqual(['a', 'first', 'start']);
    expect([...upstreamOf(def, 'side', index)]).toEqual(['start']);
  });

  it('lists containers innermost first', () => {
    const nested = indexBlocks(tree());
    expect(containersOf('deep', nested).map((b) => b.id)).toEqual(['par', 'loop']);
    expect(containersOf('after', nested)).toEqual([]);
  });
});

describe('freeSpot', () => {
  it('moves a new block below the siblings it would overlap', () => {
    const siblings = [fn('x', { position: { x: 0, y: 0 } })];
    const spot = freeSpot({ x: 0, y: 0 }, { width: 220, height: 76 }, siblings);
    expect(spot.x).toBe(0);
    expect(spot.y).toBeGreaterThanOrEqual(76 + 20);
    expect(freeSpot({ x: 1000, y: 0 }, { width: 220, height: 76 }, siblings)).toEqual({ x: 1000, y: 0 });
  });
});
