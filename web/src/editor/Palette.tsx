// The block palette: click (or Enter) adds a block next to the selection, or drag it onto the canvas
// (into a loop or parallel to put it inside). Each workspace connector adds a group with one item per
// operation: a `connector` block with its connector and operation preset.
import type { DragEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { listConnectors, type Connector, type ConnectorOperation } from '../pages/connectors/api';
import { useSession } from '../session';
import { DRAG_PRESET, DRAG_TYPE, type BlockPreset } from './Canvas';
import { BLOCK_HELP, PALETTE_GROUPS, PALETTE_HIDDEN, type BlockTypeInfo } from './schema';
import { titleOf } from './graph';

/** The preset block for one operation; its name is the operation id so references read `<listPets.data>`. */
export function operationPreset(connector: Connector, op: ConnectorOperation): BlockPreset {
  return { name: op.operationId, config: { connectorId: connector.id, operationId: op.operationId, parameters: {} } };
}

/**
 * `unavailable` gives, per type, why it cannot be added now (e.g. a second Start block): such an entry
 * stays focusable and says why in its tooltip, but adds nothing.
 */
export function Palette({ types, onAdd, disabled, unavailable }: {
  types: BlockTypeInfo[]; onAdd(type: string, preset?: BlockPreset): void; disabled: boolean; unavailable(type: string): string | null;
}) {
  const { workspaceId } = useSession();
  const known = new Set(types.map((t) => t.type));
  // Without the connector block type (an older server) there is nothing to place.
  const connectors = useQuery({ queryKey: ['connectors', workspaceId], queryFn: () => listConnectors(workspaceId), enabled: known.has('connector'), staleTime: 10_000 });
  const grouped = new Set([...PALETTE_GROUPS.flatMap((g) => g.types), ...PALETTE_HIDDEN]);
  const groups = [...PALETTE_GROUPS.map((g) => ({ ...g, types: g.types.filter((t) => known.has(t)) })), { label: 'Other', types: types.map((t) => t.type).filter((t) => !grouped.has(t)) }]
    .filter((g) => g.types.length > 0);
  const onDragStart = (e: DragEvent, type: string, preset?: BlockPreset) => {
    e.dataTransfer.setData(DRAG_TYPE, type);
    if (preset) e.dataTransfer.setData(DRAG_PRESET, JSON.stringify(preset));
    e.dataTransfer.effectAllowed = 'copy';
  };
  return (
    <nav className="palette" aria-label="Block palette">
      <h2 className="sr-only">Add a block</h2>
      {groups.map((g) => (
        <div key={g.label} className="palette-group" role="group" aria-label={g.label}>
          <div className="palette-group-label">{g.label}</div>
          {g.types.map((t) => {
            const reason = disabled ? null : unavailable(t);
            return (
              <button
                key={t}
                type="button"
                className="palette-item"
                draggable={!disabled && !reason}
                disabled={disabled}
                aria-disabled={reason ? true : undefined}
                onDragStart={(e) => (reason ? e.preventDefault() : onDragStart(e, t))}
                onClick={() => { if (!reason) onAdd(t); }}
                aria-label={`Add ${t} block`}
                title={reason ?? BLOCK_HELP[t]}
              >
                <span className={`palette-dot type-${t}`} aria-hidden="true" />
                <span className="palette-text">
                  <span className="palette-name">{titleOf(t)}</span>
                  <span className="palette-help">{reason ? 'Already in this workflow' : (BLOCK_HELP[t] ?? '')}</span>
                </span>
              </button>
            );
          })}
        </div>
      ))}
      {(connectors.data ?? []).filter((c) => c.operations.length > 0).map((c) => (
        <div key={c.id} className="palette-group" role="group" aria-label={`Connector ${c.name}`}>
          <div className="palette-group-label">{c.name}</div>
          {c.operations.map((op) => {
            const preset = operationPreset(c, op);
            return (
              <button
                key={op.operationId}
                type="button"
                className="palette-item"
                draggable={!disabled}
                disabled={disabled}
                onDragStart={(e) => onDragStart(e, 'connector', preset)}
                onClick={() => onAdd('connector', preset)}
                aria-label={`Add ${c.name} ${op.operationId} block`}
                title={`${op.method} ${op.path}${op.summary ? `: ${op.summary}` : ''}`}
              >
                <span className="palette-dot type-connector" aria-hidden="true" />
                <span className="palette-text">
                  <span className="palette-name">{op.operationId}</span>
                  <span className="palette-help">{op.summary || `${op.method} ${op.path}`}</span>
                </span>
              </button>
            );
          })}
        </div>
      ))}
    </nav>
  );
}
