// The side panel for the selected block: name, config form from its schema, retries, connections (a
// keyboard way to join blocks), delete. With nothing selected: the workflow's own settings and blocks.
import { useId, useMemo, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { listSecrets } from '../api/secrets';
import { useSession } from '../session';
import type { BlockDef, Definition, DefinitionIssue, EdgeDef } from '../api/workflows';
import { Button, ConfirmDialog, InputField, TextAreaField } from '../ui';
import { branchHandles, edgeKey, ENTRY_TYPES, indexBlocks, normalizeName, updateBlock } from './graph';
import { secretSuggestions, suggestionsFor } from './references';
import { ConnectorFields } from './ConnectorForm';
import { ObjectFields } from './SchemaForm';
import type { BlockTypeInfo } from './schema';

interface InspectorProps {
  definition: Definition;
  onChange(def: Definition): void;
  blockId: string | null;
  types: BlockTypeInfo[];
  issues: DefinitionIssue[];
  readOnly: boolean;
  onSelect(id: string | null): void;
  onDelete(id: string): void;
}

function Connections({ definition, block, onChange, readOnly }: { definition: Definition; block: BlockDef; onChange(def: Definition): void; readOnly: boolean }) {
  const index = useMemo(() => indexBlocks(definition.blocks), [definition.blocks]);
  const parent = index.get(block.id)?.parentId ?? null;
  const siblings = [...index.values()].filter((l) => l.parentId === parent && l.block.id !== block.id && !ENTRY_TYPES.has(l.block.type)).map((l) => l.block);
  const handles = [...(branchHandles(block).length ? branchHandles(block).map((b) => `branch:${b}`) : ['out']), 'error'];
  const [to, setTo] = useState('');
  const [handle, setHandle] = useState(handles[0]);
  const toId = useId();
  const handleId = useId();
  const outgoing = definition.edges.filter((e) => e.from === block.id);
  const incoming = definition.edges.filter((e) => e.to === block.id);
  const nameOf = (id: string) => index.get(id)?.block.name ?? id;
  const describe = (e: EdgeDef) => (e.on === 'error' ? ' (on error)' : e.branch ? ` (branch ${e.branch})` : '');
  const add = () => {
    const target = to || siblings[0]?.id;
    if (!target) return;
    const h = handles.includes(handle) ? handle : handles[0];
    const e: EdgeDef = h === 'error' ? { from: block.id, to: target, on: 'error' } : h.startsWith('branch:') ? { from: block.id, to: target, branch: h.slice(7) } : { from: block.id, to: target };
    if (!definition.edges.some((x) => edgeKey(x) === edgeKey(e))) onChange({ ...definition, edges: [...definition.edges, e] });
  };
  const remove = (e: EdgeDef) => onChange({ ...definition, edges: definition.edges.filter((x) => edgeKey(x) !== edgeKey(e)) });
  return (
    <section className="stack" aria-label="Connections">
      <h3>Connections</h3>
      {incoming.length === 0 && outgoing.length === 0 ? <p className="muted small">Not connected. Drag from a handle on the canvas, or connect here.</p> : null}
      <ul className="edge-list">
        {incoming.map((e) => <li key={edgeKey(e)}>From <strong>{nameOf(e.from)}</strong>{describe(e)} {!readOnly ? <Button size="sm" variant="ghost" aria-label={`Remove connection from ${nameOf(e.from)}`} onClick={() => remove(e)}>Remove</Button> : null}</li>)}
        {outgoing.map((e) => <li key={edgeKey(e)}>To <strong>{nameOf(e.to)}</strong>{describe(e)} {!readOnly ? <Button size="sm" variant="ghost" aria-label={`Remove connection to ${nameOf(e.to)}`} onClick={() => remove(e)}>Remove</Button> : null}</li>)}
      </ul>
      {!readOnly && siblings.length > 0 ? (
        <div className="row gap connect-row">
          <div className="field">
            <label className="field-label" htmlFor={toId}>Connect to</label>
            <select id={toId} className="input" value={to || siblings[0]?.id} onChange={(e) => setTo(e.target.value)}>
              {siblings.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
            </select>
          </div>
          <div className="field">
            <label className="field-label" htmlFor={handleId}>When</label>
            <select id={handleId} className="input" value={handles.includes(handle) ? handle : handles[0]} onChange={(e) => setHandle(e.target.value)}>
              {handles.map((h) => <option key={h} value={h}>{h === 'out' ? 'done' : h === 'error' ? 'on error' : `branch ${h.slice(7)}`}</option>)}
            </select>
          </div>
          <Button onClick={add}>Connect</Button>
        </div>
      ) : null}
    </section>
  );
}

function WorkflowSettings({ definition, onChange, readOnly, onSelect }: Pick<InspectorProps, 'definition' | 'onChange' | 'readOnly' | 'onSelect'>) {
  const index = useMemo(() => indexBlocks(definition.blocks), [definition.blocks]);
  const [varsText, setVarsText] = useState<string | null>(null);
  const [varsError, setVarsError] = useState<string | null>(null);
  const vars = definition.variables ?? {};
  return (
    <div className="stack">
      <h2>Workflow</h2>
      <p className="muted small">Select a block on the canvas (or below) to edit it. Add blocks from the palette; connect them by dragging from a block's right handle to another block, or from the selected block's panel.</p>
      <section aria-label="Blocks">
        <h3>Blocks</h3>
        <ul className="block-list">
          {[...index.values()].map(({ block, depth }) => (
            <li key={block.id} style={{ paddingLeft: depth * 14 }}>
              <button type="button" className="link-button" onClick={() => onSelect(block.id)}>{block.name}</button> <span className="muted small">{block.type}</span>
            </li>
          ))}
        </ul>
      </section>
      <TextAreaField
        label="Variables"
        hint="JSON object; blocks read them as <variable.name>."
        disabled={readOnly}
        value={varsText ?? JSON.stringify(vars, null, 2)}
        error={varsError ?? undefined}
        onChange={(e) => setVarsText(e.target.value)}
        onBlur={() => {
          if (varsText === null) return;
          try {
            const v = JSON.parse(varsText || '{}');
            if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
            onChange({ ...definition, variables: v });
            setVarsError(null);
            setVarsText(null);
          } catch {
            setVarsError('Variables must be a JSON object.');
          }
        }}
      />
    </div>
  );
}

export function Inspector({ definition, onChange, blockId, types, issues, readOnly, onSelect, onDelete }: InspectorProps) {
  const index = useMemo(() => indexBlocks(definition.blocks), [definition.blocks]);
  const block = blockId ? index.get(blockId)?.block : undefined;
  const { workspaceId } = useSession();
  // Names only, for `{{` completion; a failure leaves just the block references.
  const secrets = useQuery({ queryKey: ['secrets', workspaceId], queryFn: () => listSecrets(workspaceId), staleTime: 10_000 });
  const suggestions = useMemo(
    () => (block ? [...suggestionsFor(definition, block.id), ...secretSuggestions((secrets.data ?? []).map((s) => s.name))] : []),
    [definition, block, secrets.data],
  );
  const [confirmDelete, setConfirmDelete] = useState(false);
  if (!block) return <WorkflowSettings definition={definition} onChange={onChange} readOnly={readOnly} onSelect={onSelect} />;

  const schema = types.find((t) => t.type === block.type)?.config ?? { type: 'object' };
  const mine = issues.filter((i) => i.blockId === block.id);
  const errors: Record<string, string> = {};
  for (const i of mine) if (i.field?.startsWith('config.')) errors[i.field.slice(7)] = i.message.replace(/^Block "[^"]*" \([^)]*\): /, '');
  const general = mine.filter((i) => !i.field?.startsWith('config.'));
  const set = (fn: (b: BlockDef) => BlockDef) => onChange({ ...definition, blocks: updateBlock(definition.blocks, block.id, fn) });
  const nameClash = [...index.values()].some((l) => l.block.id !== block.id && normalizeName(l.block.name) === normalizeName(block.name));
  const refHead = ENTRY_TYPES.has(block.type) ? block.type : normalizeName(block.name);

  return (
    <div className="stack inspector">
      <div className="row gap inspector-head">
        <h2>{block.name}</h2>
        <span className="muted small">{block.type} · id <code>{block.id}</code></span>
      </div>
      {general.map((i, n) => <div key={n} className="banner banner-error" role="alert">{i.message}</div>)}
      <fieldset disabled={readOnly} className="plain-fieldset stack">
        <InputField label="Name" value={block.name} maxLength={200} required onChange={(e) => set((b) => ({ ...b, name: e.target.value }))}
          hint={<>Other blocks refer to its output as <code>{`<${refHead}.field>`}</code>.</>} error={nameClash ? 'Another block has the same name (names must differ ignoring case, spaces and dots).' : undefined} />
        {block.type === 'connector' ? (
          <ConnectorFields schema={schema} value={(block.config ?? {}) as Record<string, unknown>} onChange={(c) => set((b) => ({ ...b, config: c }))} ctx={{ suggestions, errors }} />
        ) : (
          <ObjectFields schema={schema} value={(block.config ?? {}) as Record<string, unknown>} onChange={(c) => set((b) => ({ ...b, config: c }))} path="" ctx={{ suggestions, errors }} />
        )}
        {!ENTRY_TYPES.has(block.type) ? (
          <fieldset className="fieldset">
            <legend>Retries</legend>
            <label className="checkbox">
              <input type="checkbox" checked={!!block.retry} onChange={(e) => set((b) => { const { retry: _r, ...rest } = b; return e.target.checked ? { ...rest, retry: { maxAttempts: 3, backoffMs: 1000 } } : rest; })} />
              Retry when it fails
            </label>
            {block.retry ? (
              <div className="grid-2">
                <InputField label="Max attempts" type="number" min={1} max={5} value={block.retry.maxAttempts} onChange={(e) => set((b) => ({ ...b, retry: { ...b.retry!, maxAttempts: Number(e.target.value) || 1 } }))} />
                <InputField label="Backoff (ms)" type="number" min={0} max={10000} value={block.retry.backoffMs ?? 1000} onChange={(e) => set((b) => ({ ...b, retry: { ...b.retry!, backoffMs: Number(e.target.value) || 0 } }))} />
              </div>
            ) : null}
          </fieldset>
        ) : null}
      </fieldset>
      <Connections definition={definition} block={block} onChange={onChange} readOnly={readOnly} />
      {!readOnly ? (
        <div className="row gap">
          <Button variant="danger" onClick={() => ((block.blocks?.length ?? 0) > 0 ? setConfirmDelete(true) : onDelete(block.id))}>Delete block</Button>
          <Button variant="ghost" onClick={() => onSelect(null)}>Done</Button>
        </div>
      ) : null}
      <ConfirmDialog
        open={confirmDelete}
        title={`Delete ${block.name}?`}
        message={`The ${block.type} and the ${block.blocks?.length ?? 0} block(s) inside it are removed from the draft.`}
        confirmLabel="Delete"
        danger
        onConfirm={() => { setConfirmDelete(false); onDelete(block.id); }}
        onCancel={() => setConfirmDelete(false)}
      />
    </div>
  );
}
