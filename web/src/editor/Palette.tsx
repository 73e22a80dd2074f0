// The block palette: click (or Enter) adds a block next to the selection, or drag it onto the canvas
// (into a loop or parallel to put it inside).
import type { DragEvent } from 'react';
import { DRAG_TYPE } from './Canvas';
import { BLOCK_HELP, PALETTE_GROUPS, type BlockTypeInfo } from './schema';
import { titleOf } from './graph';

export function Palette({ types, onAdd, disabled }: { types: BlockTypeInfo[]; onAdd(type: string): void; disabled: boolean }) {
  const known = new Set(types.map((t) => t.type));
  const grouped = new Set(PALETTE_GROUPS.flatMap((g) => g.types));
  const groups = [...PALETTE_GROUPS.map((g) => ({ ...g, types: g.types.filter((t) => known.has(t)) })), { label: 'Other', types: types.map((t) => t.type).filter((t) => !grouped.has(t)) }]
    .filter((g) => g.types.length > 0);
  const onDragStart = (e: DragEvent, type: string) => {
    e.dataTransfer.setData(DRAG_TYPE, type);
    e.dataTransfer.effectAllowed = 'copy';
  };
  return (
    <nav className="palette" aria-label="Block palette">
      <h2 className="sr-only">Add a block</h2>
      {groups.map((g) => (
        <div key={g.label} className="palette-group" role="group" aria-label={g.label}>
          <div className="palette-group-label">{g.label}</div>
          {g.types.map((t) => (
            <button
              key={t}
              type="button"
              className="palette-item"
              draggable={!disabled}
              disabled={disabled}
              onDragStart={(e) => onDragStart(e, t)}
              onClick={() => onAdd(t)}
              aria-label={`Add ${t} block`}
              title={BLOCK_HELP[t]}
            >
              <span className={`palette-dot type-${t}`} aria-hidden="true" />
              <span className="palette-text">
                <span className="palette-name">{titleOf(t)}</span>
                <span className="palette-help">{BLOCK_HELP[t] ?? ''}</span>
              </span>
            </button>
          ))}
        </div>
      ))}
    </nav>
  );
}
