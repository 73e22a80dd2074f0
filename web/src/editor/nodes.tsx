// The canvas's node kinds: a block (input on the left; output, branch and error handles on the right)
// and a container (loop or parallel) that holds blocks and can be resized.
import { memo } from 'react';
import { Handle, NodeResizer, Position, type NodeProps } from '@xyflow/react';
import type { BlockDef } from '../api/workflows';
import { useEditor } from './context';
import { branchHandles, ENTRY_TYPES } from './graph';

function summary(b: BlockDef): string {
  const c = b.config ?? {};
  switch (b.type) {
    case 'start': return Array.isArray(c.inputFormat) && c.inputFormat.length ? `inputs: ${(c.inputFormat as { name?: string }[]).map((f) => f.name).join(', ')}` : 'no inputs';
    case 'http': return `${String(c.method ?? 'GET')} ${String(c.url ?? '')}`;
    case 'function': return String(c.code ?? '').split('\n')[0].slice(0, 60);
    case 'loop': case 'parallel': return `${String(c.kind ?? '')} ${String(c.count ?? c.items ?? c.condition ?? '')}`.trim();
    case 'table': return `${String(c.operation ?? '')} ${String(c.tableId ?? '')}`.trim();
    case 'wait': return `${String(c.seconds ?? '')} s`;
    case 'connector': return String(c.operationId ?? '');
    default: return '';
  }
}

function Issues({ id }: { id: string }) {
  const { issuesByBlock } = useEditor();
  const list = issuesByBlock.get(id);
  if (!list?.length) return null;
  return <div className="node-issue" role="note"><span aria-hidden="true">⚠ </span>{list[0]}{list.length > 1 ? ` (+${list.length - 1})` : ''}</div>;
}

function OutHandles({ block }: { block: BlockDef }) {
  const branches = branchHandles(block);
  return (
    <>
      {branches.length === 0 ? <Handle type="source" position={Position.Right} id="out" className="handle" aria-label="Output" /> : null}
      {branches.map((br, i) => (
        <Handle key={br} type="source" position={Position.Right} id={`branch:${br}`} className="handle handle-branch"
          style={{ top: `${((i + 1) / (branches.length + 1)) * 100}%` }} aria-label={`Branch ${br}`}>
          <span className="handle-label">{br}</span>
        </Handle>
      ))}
      <Handle type="source" position={Position.Bottom} id="error" className="handle handle-error" aria-label="On error" title="On error" />
    </>
  );
}

export const BlockNode = memo(function BlockNode({ id, selected }: NodeProps) {
  const { index, issuesByBlock } = useEditor();
  const b = index.get(id)?.block;
  if (!b) return null;
  const bad = (issuesByBlock.get(id)?.length ?? 0) > 0;
  const branches = branchHandles(b);
  return (
    <div className={`wf-node type-${b.type}${selected ? ' selected' : ''}${bad ? ' invalid' : ''}`} style={branches.length > 2 ? { minHeight: 24 + branches.length * 22 } : undefined} data-block-id={b.id}>
      {!ENTRY_TYPES.has(b.type) ? <Handle type="target" position={Position.Left} id="in" className="handle" aria-label="Input" /> : null}
      <div className="wf-node-type">{b.type}</div>
      <div className="wf-node-name">{b.name}</div>
      {summary(b) ? <div className="wf-node-summary">{summary(b)}</div> : null}
      <Issues id={id} />
      <OutHandles block={b} />
    </div>
  );
});

export const ContainerNode = memo(function ContainerNode({ id, selected }: NodeProps) {
  const { index, issuesByBlock, readOnly } = useEditor();
  const b = index.get(id)?.block;
  if (!b) return null;
  const bad = (issuesByBlock.get(id)?.length ?? 0) > 0;
  return (
    <div className={`wf-container type-${b.type}${selected ? ' selected' : ''}${bad ? ' invalid' : ''}`} data-block-id={b.id}>
      <NodeResizer isVisible={selected && !readOnly} minWidth={240} minHeight={160} />
      <Handle type="target" position={Position.Left} id="in" className="handle" aria-label="Input" />
      <div className="wf-container-head">
        <span className="wf-node-type">{b.type}</span> <strong>{b.name}</strong> <span className="muted small">{summary(b)}</span>
      </div>
      <Issues id={id} />
      {(b.blocks ?? []).length === 0 ? <div className="wf-container-empty muted small">Drop blocks here, or select this {b.type} and add blocks from the palette.</div> : null}
      <OutHandles block={b} />
    </div>
  );
});

export const nodeTypes = { block: BlockNode, container: ContainerNode };
