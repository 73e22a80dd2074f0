// A text field (input or textarea) that completes references: typing `<` lists what upstream blocks,
// the start block, containers and variables offer, and `{{` the workspace's secrets; arrows choose,
// Enter or Tab inserts, Escape closes.
import { useId, useMemo, useRef, useState, type ChangeEvent, type KeyboardEvent } from 'react';
import { partialAt, type RefSuggestion } from './references';

export interface RefInputProps {
  id: string;
  value: string;
  onChange(value: string): void;
  suggestions: RefSuggestion[];
  multiline?: boolean;
  rows?: number;
  placeholder?: string;
  describedBy?: string;
  invalid?: boolean;
  required?: boolean;
  mono?: boolean;
}

const MAX_SHOWN = 8;

export function RefInput({ id, value, onChange, suggestions, multiline, rows, placeholder, describedBy, invalid, required, mono }: RefInputProps) {
  const listId = useId();
  const ref = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  const [partial, setPartial] = useState<{ start: number; typed: string; caret: number } | null>(null);
  const [active, setActive] = useState(0);

  const matches = useMemo(() => {
    if (!partial) return [];
    const t = partial.typed.toLowerCase();
    // `<` offers block references, `{{` secrets
    const pool = suggestions.filter((s) => s.ref[0] === t[0]);
    const starts = pool.filter((s) => s.ref.toLowerCase().startsWith(t));
    const inner = t.length > 1 ? pool.filter((s) => !starts.includes(s) && s.ref.toLowerCase().includes(t.slice(t[0] === '{' ? 2 : 1))) : [];
    return [...starts, ...inner].slice(0, MAX_SHOWN);
  }, [partial, suggestions]);
  const open = matches.length > 0;

  const track = (el: HTMLInputElement | HTMLTextAreaElement) => {
    const caret = el.selectionStart ?? el.value.length;
    const p = partialAt(el.value, caret);
    setPartial(p ? { ...p, caret } : null);
    setActive(0);
  };

  const accept = (s: RefSuggestion) => {
    if (!partial) return;
    const after = value.slice(partial.caret);
    // a `>` (or `}}`) already typed after the caret belongs to the reference being completed
    const rest = after.startsWith('>') ? after.slice(1) : after.startsWith('}}') && s.ref.startsWith('{{') ? after.slice(2) : after;
    const next = value.slice(0, partial.start) + s.ref + rest;
    onChange(next);
    setPartial(null);
    const pos = partial.start + s.ref.length;
    requestAnimationFrame(() => { ref.current?.focus(); ref.current?.setSelectionRange(pos, pos); });
  };

  const onKeyDown = (e: KeyboardEvent) => {
    if (!open) return;
    if (e.key === 'ArrowDown') { e.preventDefault(); setActive((a) => (a + 1) % matches.length); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); setActive((a) => (a - 1 + matches.length) % matches.length); }
    else if (e.key === 'Enter' || e.key === 'Tab') { e.preventDefault(); accept(matches[active]); }
    else if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); setPartial(null); }
  };

  const common = {
    id,
    ref,
    value,
    placeholder,
    required,
    className: `input${mono ? ' mono' : ''}`,
    role: 'combobox',
    'aria-autocomplete': 'list' as const,
    'aria-expanded': open,
    'aria-controls': open ? listId : undefined,
    'aria-activedescendant': open ? `${listId}-${active}` : undefined,
    'aria-describedby': describedBy,
    'aria-invalid': invalid || undefined,
    spellCheck: false,
    autoComplete: 'off',
    onChange: (e: ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) => { onChange(e.target.value); track(e.target); },
    onKeyDown,
    onClick: (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement }) => track(e.currentTarget),
    onBlur: () => window.setTimeout(() => setPartial(null), 150),
  };

  return (
    <div className="ref-input">
      {multiline ? <textarea rows={rows ?? 4} {...common} /> : <input type="text" {...common} />}
      {open ? (
        <ul className="ref-list" role="listbox" id={listId} aria-label="References">
          {matches.map((s, i) => (
            <li
              key={s.ref}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              className={`ref-option${i === active ? ' active' : ''}`}
              onMouseDown={(e) => { e.preventDefault(); accept(s); }}
            >
              <code>{s.ref}</code> <span className="muted small">{s.detail}</span>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
