// The React Flow canvas over a definition. The definition is the one source of truth: nodes and edges
// are derived from it, and every change (move, resize, connect, delete, drop into a container) is
// turned back into a new definition for the page to keep.
import { useCallback, useEffect, useMemo, useState, type DragEvent } from 'react';
import {
  Background, Controls, MarkerType, MiniMap, ReactFlow, useReactFlow,
  type Connection, type Edge, type EdgeChange, type Node, type NodeChange,
} from '@xyflow/react';
import type { BlockDef, Definition } from '../api/workflows';
import { EditorContext } from './context';
import {
  containerSize, edgeFromHandle, edgeKey, ENTRY_TYPES, indexBlocks, insertBlock, isContainer, removeBlocks, sourceHandleOf, updateBlock,
  NODE_HEIGHT, NODE_WIDTH, type Located,
} from './graph';
import { nodeTypes } from './nodes';

export const DRAG_TYPE = 'application/x-weft-block';
/** With DRAG_TYPE: JSON {name, config} of a preset block (a connector operation from the palette). */
export const DRAG_PRESET = 'application/x-weft-block-preset';

export interface BlockPreset { name: string; config: Record<string, unknown> }

function presetOf(text: string): BlockPreset | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Partial<BlockPreset>;
    return typeof v.name === 'string' && v.config && typeof v.config === 'object' ? { name: v.name, config: v.config } : undefined;
  } catch {
    return undefined;
  }
}

export interface Selection { nodes: Set<string>; edge: string | null }

interface CanvasProps {
  definition: Definition;
  onChange(def: Definition): void;
  selection: Selection;
  onSelect(sel: Selection): void;
  issuesByBlock: Map<string, string[]>;
  readOnly: boolean;
  /** Changes when the view should fit every block again (a block was added from the palette). */
  fitSignal: number;
  /** A palette item dropped on the canvas: where (relative to its container) and in which container. */
  onDropType(type: string, position: { x: number; y: number }, parentId: string | null, preset?: BlockPreset): void;
}

const round = (p: { x: number; y: number }) => ({ x: Math.round(p.x), y: Math.round(p.y) });

/** The innermost container whose rectangle holds the point (absolute canvas coordinates). */
function containerAt(point: { x: number; y: number }, index: Map<string, Located>, absolute: (id: string) => { x: number; y: number } | undefined, exclude: Set<string>): string | null {
  let best: { id: string; area: number } | null = null;
  for (const [id, { block }] of index) {
    if (!isContainer(block) || exclude.has(id)) continue;
    const p = absolute(id);
    if (!p) continue;
    const s = containerSize(block);
    if (point.x >= p.x && point.x <= p.x + s.width && point.y >= p.y && point.y <= p.y + s.height) {
      const area = s.width * s.height;
      if (!best || area < best.area) best = { id, area };
    }
  }
  return best?.id ?? null;
}

function descendants(b: BlockDef, out = new Set<string>()): Set<string> {
  out.add(b.id);
  b.blocks?.forEach((k) => descendants(k, out));
  return out;
}

export function Canvas({ definition, onChange, selection, onSelect, issuesByBlock, readOnly, fitSignal, onDropType }: CanvasProps) {
  const flow = useReactFlow();
  // sizes React Flow measured for plain blocks, handed back so it keeps treating them as measured
  const [measured, setMeasured] = useState(() => new Map<string, { width: number; height: number }>());
  const index = useMemo(() => indexBlocks(definition.blocks), [definition.blocks]);

  const nodes = useMemo<Node[]>(() => {
    const out: Node[] = [];
    const walk = (list: BlockDef[], parentId: string | null) => {
      for (const b of list) {
        const container = isContainer(b);
        const size = container ? containerSize(b) : undefined;
        out.push({
          id: b.id,
          type: container ? 'container' : 'block',
          position: b.position ?? { x: 0, y: 0 },
          parentId: parentId ?? undefined,
          data: {},
          selected: selection.nodes.has(b.id),
          ...(size ? { width: size.width, height: size.height } : {}),
          measured: size ?? measured.get(b.id),
          ariaLabel: `${b.type} block ${b.name}`,
        });
        if (b.blocks) walk(b.blocks, b.id);
      }
    };
    walk(definition.blocks, null);
    return out;
  }, [definition.blocks, selection.nodes, measured]);

  const edges = useMemo<Edge[]>(() => definition.edges.map((e) => {
    const handle = sourceHandleOf(e);
    const isError = handle === 'error';
    return {
      id: edgeKey(e),
      source: e.from,
      target: e.to,
      sourceHandle: handle,
      targetHandle: 'in',
      selected: selection.edge === edgeKey(e),
      label: isError ? 'error' : undefined, // branch names are on the handles already
      className: isError ? 'edge-error' : undefined,
      markerEnd: { type: MarkerType.ArrowClosed },
      ariaLabel: `Connection from ${index.get(e.from)?.block.name ?? e.from} to ${index.get(e.to)?.block.name ?? e.to}${e.branch ? ` on branch ${e.branch}` : ''}${isError ? ' on error' : ''}`,
    };
  }), [definition.edges, selection.edge, index]);

  const removeIds = useCallback((def: Definition, ids: Set<string>): Definition => {
    const { blocks, removed } = removeBlocks(def.blocks, ids);
    return { ...def, blocks, edges: def.edges.filter((e) => !removed.has(e.from) && !removed.has(e.to)) };
  }, []);

  const onNodesChange = useCallback((changes: NodeChange[]) => {
    let def = definition;
    let sel: Set<string> | null = null;
    const toRemove = new Set<string>();
    const sizes = new Map<string, { width: number; height: number }>();
    for (const c of changes) {
      if (c.type === 'dimensions' && c.dimensions) {
        const loc = index.get(c.id);
        if (loc && isContainer(loc.block) && c.resizing !== undefined && !readOnly) {
          def = { ...def, blocks: updateBlock(def.blocks, c.id, (b) => ({ ...b, size: { width: Math.round(c.dimensions!.width), height: Math.round(c.dimensions!.height) } })) };
        } else {
          const prev = measured.get(c.id);
          if (!prev || prev.width !== c.dimensions.width || prev.height !== c.dimensions.height) sizes.set(c.id, c.dimensions);
        }
      } else if (c.type === 'position' && c.position && !readOnly) {
        def = { ...def, blocks: updateBlock(def.blocks, c.id, (b) => ({ ...b, position: round(c.position!) })) };
      } else if (c.type === 'select') {
        sel ??= new Set(selection.nodes);
        if (c.selected) sel.add(c.id);
        else sel.delete(c.id);
      } else if (c.type === 'remove' && !readOnly) {
        toRemove.add(c.id);
      }
    }
    if (toRemove.size) def = removeIds(def, toRemove);
    if (def !== definition) onChange(def);
    if (sel) onSelect({ nodes: sel, edge: sel.size ? null : selection.edge });
    else if (toRemove.size) onSelect({ nodes: new Set([...selection.nodes].filter((id) => !toRemove.has(id))), edge: null });
    if (sizes.size) setMeasured((prev) => new Map([...prev, ...sizes]));
  }, [definition, index, measured, onChange, onSelect, readOnly, removeIds, selection]);

  const onEdgesChange = useCallback((changes: EdgeChange[]) => {
    let edgesNext = definition.edges;
    let selEdge: string | null | undefined;
    for (const c of changes) {
      if (c.type === 'remove' && !readOnly) edgesNext = edgesNext.filter((e) => edgeKey(e) !== c.id);
      if (c.type === 'select') selEdge = c.selected ? c.id : (selEdge ?? (selection.edge === c.id ? null : selection.edge));
    }
    if (edgesNext !== definition.edges) onChange({ ...definition, edges: edgesNext });
    if (selEdge !== undefined) onSelect({ nodes: selEdge ? new Set() : selection.nodes, edge: selEdge });
  }, [definition, onChange, onSelect, readOnly, selection]);

  const onConnect = useCallback((c: Connection) => {
    if (readOnly || !c.source || !c.target || c.source === c.target) return;
    const e = edgeFromHandle(c.source, c.target, c.sourceHandle);
    if (definition.edges.some((x) => edgeKey(x) === edgeKey(e))) return;
    onChange({ ...definition, edges: [...definition.edges, e] });
  }, [definition, onChange, readOnly]);

  const absolute = useCallback((id: string) => flow.getInternalNode(id)?.internals.positionAbsolute, [flow]);

  // A block dragged into (or out of) a container moves into it in the tree; edges that would now cross
  // a container's border are dropped, since the server refuses them.
  const onNodeDragStop = useCallback((_e: unknown, node: Node) => {
    if (readOnly) return;
    const loc = index.get(node.id);
    const abs = absolute(node.id);
    if (!loc || !abs) return;
    const size = isContainer(loc.block) ? containerSize(loc.block) : { width: NODE_WIDTH, height: NODE_HEIGHT };
    const center = { x: abs.x + size.width / 2, y: abs.y + size.height / 2 };
    const target = containerAt(center, index, absolute, descendants(loc.block));
    if (target === loc.parentId) return;
    const base = target ? absolute(target) ?? { x: 0, y: 0 } : { x: 0, y: 0 };
    const moved: BlockDef = { ...loc.block, position: round({ x: abs.x - base.x, y: abs.y - base.y }) };
    const without = removeBlocks(definition.blocks, new Set([node.id])).blocks;
    const blocks = insertBlock(without, moved, target);
    const parents = indexBlocks(blocks);
    const edgesNext = definition.edges.filter((e) => parents.get(e.from)?.parentId === parents.get(e.to)?.parentId);
    onChange({ ...definition, blocks, edges: edgesNext });
  }, [absolute, definition, index, onChange, readOnly]);

  const onDragOver = (e: DragEvent) => {
    if (e.dataTransfer.types.includes(DRAG_TYPE)) { e.preventDefault(); e.dataTransfer.dropEffect = 'copy'; }
  };
  const onDrop = (e: DragEvent) => {
    const type = e.dataTransfer.getData(DRAG_TYPE);
    if (!type || readOnly) return;
    e.preventDefault();
    const point = flow.screenToFlowPosition({ x: e.clientX, y: e.clientY });
    const parent = isContainer({ type }) || ENTRY_TYPES.has(type) ? null : containerAt(point, index, absolute, new Set());
    const base = parent ? absolute(parent) ?? { x: 0, y: 0 } : { x: 0, y: 0 };
    onDropType(type, round({ x: point.x - base.x - NODE_WIDTH / 2, y: point.y - base.y - 20 }), parent, presetOf(e.dataTransfer.getData(DRAG_PRESET)));
  };

  useEffect(() => {
    if (fitSignal === 0) return;
    // after the new block is rendered and measured
    const t = window.setTimeout(() => void flow.fitView({ padding: 0.1, maxZoom: 1.1, duration: 200 }), 60);
    return () => window.clearTimeout(t);
  }, [fitSignal, flow]);

  const ctx = useMemo(() => ({ index, issuesByBlock, readOnly }), [index, issuesByBlock, readOnly]);

  return (
    <EditorContext.Provider value={ctx}>
      <div className="canvas" onDragOver={onDragOver} onDrop={onDrop}>
        <ReactFlow
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          onNodesChange={onNodesChange}
          onEdgesChange={onEdgesChange}
          onConnect={onConnect}
          onNodeDragStop={onNodeDragStop}
          onPaneClick={() => onSelect({ nodes: new Set(), edge: null })}
          nodesDraggable={!readOnly}
          nodesConnectable={!readOnly}
          deleteKeyCode={readOnly ? null : ['Backspace', 'Delete']}
          fitView
          fitViewOptions={{ padding: 0.1, maxZoom: 1.1 }}
          minZoom={0.2}
          colorMode="system"
        >
          <Background gap={16} />
          <Controls showInteractive={false} />
          <MiniMap pannable zoomable ariaLabel="Overview of the workflow" style={{ width: 140, height: 90 }} />
        </ReactFlow>
      </div>
    </EditorContext.Provider>
  );
}
