// The definition as a tree of blocks, and what the canvas needs from it: lookups, edits that keep the
// tree immutable, unique ids and names, handles, and a layout for blocks saved without positions.
import type { BlockDef, Definition, EdgeDef } from '../api/workflows';

export const CONTAINER_TYPES = new Set(['loop', 'parallel']);
export const ENTRY_TYPES = new Set(['start', 'webhook', 'schedule']);
export const isContainer = (b: Pick<BlockDef, 'type'>) => CONTAINER_TYPES.has(b.type);

export const NODE_WIDTH = 220;
export const NODE_HEIGHT = 76;
export const CONTAINER_MIN = { width: 300, height: 170 };
const GAP_X = 60;
const GAP_Y = 36;

/** Lower-case, spaces and dots removed: how references name a block (as the server normalizes). */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[\s.]+/g, '');
}

export interface Located { block: BlockDef; parentId: string | null; depth: number }

/** Every block of the tree by id, with its container (null at the top level). */
export function indexBlocks(blocks: BlockDef[]): Map<string, Located> {
  const out = new Map<string, Located>();
  const walk = (list: BlockDef[], parentId: string | null, depth: number) => {
    for (const b of list) {
      out.set(b.id, { block: b, parentId, depth });
      if (b.blocks) walk(b.blocks, b.id, depth + 1);
    }
  };
  walk(blocks, null, 0);
  return out;
}

/** Returns a copy of the tree with `fn` applied to the block `id`. */
export function updateBlock(blocks: BlockDef[], id: string, fn: (b: BlockDef) => BlockDef): BlockDef[] {
  return blocks.map((b) => {
    if (b.id === id) return fn(b);
    if (b.blocks) {
      const inner = updateBlock(b.blocks, id, fn);
      if (inner !== b.blocks && inner.some((x, i) => x !== b.blocks![i])) return { ...b, blocks: inner };
    }
    return b;
  });
}

/** Removes blocks (and their children) from the tree; returns the new tree and every removed id. */
export function removeBlocks(blocks: BlockDef[], ids: Set<string>): { blocks: BlockDef[]; removed: Set<string> } {
  const removed = new Set<string>();
  const collect = (b: BlockDef) => { removed.add(b.id); b.blocks?.forEach(collect); };
  const walk = (list: BlockDef[]): BlockDef[] => list.flatMap((b) => {
    if (ids.has(b.id)) { collect(b); return []; }
    return b.blocks ? [{ ...b, blocks: walk(b.blocks) }] : [b];
  });
  return { blocks: walk(blocks), removed };
}

/** Adds a block at the top level or inside a container. */
export function insertBlock(blocks: BlockDef[], block: BlockDef, parentId: string | null): BlockDef[] {
  if (!parentId) return [...blocks, block];
  return updateBlock(blocks, parentId, (p) => ({ ...p, blocks: [...(p.blocks ?? []), block] }));
}

/** An id no block uses yet, from the type: function, function2, ... */
export function uniqueId(base: string, taken: Set<string>): string {
  const clean = base.toLowerCase().replace(/[^a-z0-9_-]+/g, '') || 'block';
  if (!taken.has(clean)) return clean;
  for (let i = 2; ; i++) if (!taken.has(`${clean}${i}`)) return `${clean}${i}`;
}

/** A display name unique after normalization: "Function", "Function 2", ... */
export function uniqueName(base: string, takenNormalized: Set<string>): string {
  if (!takenNormalized.has(normalizeName(base))) return base;
  for (let i = 2; ; i++) if (!takenNormalized.has(normalizeName(`${base} ${i}`))) return `${base} ${i}`;
}

export const titleOf = (type: string) => type.charAt(0).toUpperCase() + type.slice(1);

/**
 * Why the palette cannot add a block of `type` to this tree, or null when it can. The server takes at
 * most one block of each entry type (start, webhook, schedule), so a second one is refused at save.
 */
export function unavailableReason(type: string, blocks: BlockDef[]): string | null {
  if (!ENTRY_TYPES.has(type)) return null;
  const existing = [...indexBlocks(blocks).values()].find((l) => l.block.type === type)?.block;
  if (!existing) return null;
  return `This workflow already has a ${titleOf(type)} block ("${existing.name}"); a workflow takes only one.`;
}

/** Outgoing branch handles of a block (condition ids, router route ids); empty for plain blocks. */
export function branchHandles(b: BlockDef): string[] {
  const c = b.config ?? {};
  if (b.type === 'condition' && Array.isArray(c.conditions)) {
    return (c.conditions as { id?: unknown }[]).map((x) => (typeof x?.id === 'string' ? x.id : '')).filter(Boolean);
  }
  if (b.type === 'router' && Array.isArray(c.routes)) {
    return (c.routes as { id?: unknown }[]).map((x) => (typeof x?.id === 'string' ? x.id : '')).filter(Boolean);
  }
  return [];
}

/** The canvas handle an edge leaves from: "out", "branch:<id>" or "error". */
export function sourceHandleOf(e: EdgeDef): string {
  if (e.on === 'error') return 'error';
  if (e.branch) return `branch:${e.branch}`;
  return 'out';
}

export function edgeFromHandle(from: string, to: string, handle: string | null | undefined): EdgeDef {
  if (handle === 'error') return { from, to, on: 'error' };
  if (handle?.startsWith('branch:')) return { from, to, branch: handle.slice('branch:'.length) };
  return { from, to };
}

export const edgeKey = (e: EdgeDef) => `${e.from}->${e.to}:${sourceHandleOf(e)}`;

/** A container's size: what was saved, else enough for its children. */
export function containerSize(b: BlockDef): { width: number; height: number } {
  if (b.size) return { width: Math.max(b.size.width, 200), height: Math.max(b.size.height, 140) };
  const kids = b.blocks ?? [];
  let w = CONTAINER_MIN.width;
  let h = CONTAINER_MIN.height;
  for (const k of kids) {
    const p = k.position ?? { x: 0, y: 0 };
    const s = isContainer(k) ? containerSize(k) : { width: NODE_WIDTH, height: NODE_HEIGHT };
    w = Math.max(w, p.x + s.width + 40);
    h = Math.max(h, p.y + s.height + 40);
  }
  return { width: w, height: h };
}

/**
 * Gives every block without a saved position one: blocks are placed in columns by their longest
 * path from an entry (edges within the same list), containers laid out inside first.
 */
export function layoutMissing(def: Definition): Definition {
  const layoutList = (list: BlockDef[], topLeft: { x: number; y: number }): BlockDef[] => {
    const withKids = list.map((b) => (b.blocks ? { ...b, blocks: layoutList(b.blocks, { x: 30, y: 50 }) } : b));
    if (withKids.every((b) => b.position)) return withKids;
    const ids = new Set(withKids.map((b) => b.id));
    const incoming = new Map<string, string[]>();
    for (const e of def.edges) if (ids.has(e.from) && ids.has(e.to)) incoming.set(e.to, [...(incoming.get(e.to) ?? []), e.from]);
    const depth = new Map<string, number>();
    const depthOf = (id: string, seen: Set<string>): number => {
      const known = depth.get(id);
      if (known !== undefined) return known;
      if (seen.has(id)) return 0; // a cycle: stop here
      seen.add(id);
      const d = Math.max(-1, ...(incoming.get(id) ?? []).map((p) => depthOf(p, seen))) + 1;
      depth.set(id, d);
      return d;
    };
    const columns = new Map<number, BlockDef[]>();
    for (const b of withKids) {
      const d = depthOf(b.id, new Set());
      columns.set(d, [...(columns.get(d) ?? []), b]);
    }
    const colX: number[] = [];
    let x = topLeft.x;
    for (let d = 0; d <= Math.max(0, ...columns.keys()); d++) {
      colX[d] = x;
      const widest = Math.max(NODE_WIDTH, ...(columns.get(d) ?? []).map((b) => (isContainer(b) ? containerSize(b).width : NODE_WIDTH)));
      x += widest + GAP_X;
    }
    const placed = new Map<string, { x: number; y: number }>();
    for (const [d, col] of columns) {
      let y = topLeft.y;
      for (const b of col) {
        placed.set(b.id, { x: colX[d], y });
        y += (isContainer(b) ? containerSize(b).height : NODE_HEIGHT) + GAP_Y;
      }
    }
    return withKids.map((b) => (b.position ? b : { ...b, position: placed.get(b.id) }));
  };
  return { ...def, blocks: layoutList(def.blocks, { x: 60, y: 60 }) };
}

/** Blocks from which `id` can be reached along edges (its upstream), containers' upstream included. */
export function upstreamOf(def: Definition, id: string, index: Map<string, Located>): Set<string> {
  const incoming = new Map<string, string[]>();
  for (const e of def.edges) incoming.set(e.to, [...(incoming.get(e.to) ?? []), e.from]);
  const out = new Set<string>();
  const visit = (target: string) => {
    for (const from of incoming.get(target) ?? []) {
      if (out.has(from)) continue;
      out.add(from);
      visit(from);
    }
  };
  // a block inside a container also sees what flows into the container (and its containers)
  let cur: string | null = id;
  while (cur) {
    visit(cur);
    cur = index.get(cur)?.parentId ?? null;
  }
  out.delete(id);
  return out;
}

/** Containers holding `id`, innermost first. */
export function containersOf(id: string, index: Map<string, Located>): BlockDef[] {
  const out: BlockDef[] = [];
  let p = index.get(id)?.parentId ?? null;
  while (p) {
    const loc = index.get(p);
    if (!loc) break;
    out.push(loc.block);
    p = loc.parentId;
  }
  return out;
}

/** Moves a new block down until it overlaps none of its future siblings. */
export function freeSpot(pos: { x: number; y: number }, size: { width: number; height: number }, siblings: BlockDef[]): { x: number; y: number } {
  const rects = siblings.map((b) => ({ p: b.position ?? { x: 0, y: 0 }, s: isContainer(b) ? containerSize(b) : { width: NODE_WIDTH, height: NODE_HEIGHT } }));
  const hits = (y: number) => rects.some((r) => pos.x < r.p.x + r.s.width + 20 && r.p.x < pos.x + size.width + 20 && y < r.p.y + r.s.height + 20 && r.p.y < y + size.height + 20);
  let y = pos.y;
  for (let i = 0; i < 200 && hits(y); i++) y += 40;
  return { x: pos.x, y };
}
