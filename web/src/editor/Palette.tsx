// The block palette: click (or Enter) adds a block next to the selection, or drag it onto the canvas
// (into a loop or parallel to put it inside).
import type { DragEvent } from 'react';
import { DRAG_TYPE } from './Canvas';
import { BLOCK_HELP, PALETTE_GROUPS, type BlockTypeInfo } from './schema';
import { titleOf } from './graph';

/**
 * `unavailable` gives, per type, why it cannot be added now (e.g. a second Start block): such an entry
 * stays focusable and says why in its tooltip, but adds nothing.
 */
export function Palette({ types, onAdd, disabled, unavailable }: { types: BlockTypeInfo[]; onAdd(type: string): void; disabled: boolean; unavailable(type: string): string | null }) {
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
    </nav>
  );
}
