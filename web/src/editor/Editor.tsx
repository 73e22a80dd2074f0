// The workflow editor: toolbar (name, save, deploy), palette, canvas and a side panel with the
// selected block's form, the run form and deployment. The draft lives here until saved.
import { useCallback, useEffect, useMemo, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ReactFlowProvider } from '@xyflow/react';
import { Link, useNavigate } from 'react-router';
import { ApiError } from '../api/client';
import {
  deleteWorkflow, deployWorkflow, getWorkflow, rollbackWorkflow, saveWorkflow, undeployWorkflow, workflowStatus,
  type BlockDef, type Definition, type DefinitionIssue, type Workflow,
} from '../api/workflows';
import { roleAllows, useSession } from '../session';
import { Button, ConfirmDialog, ErrorBanner, StatusBadge } from '../ui';
import { Canvas, type BlockPreset, type Selection } from './Canvas';
import { DeployPanel } from './DeployPanel';
import {
  branchHandles, CONTAINER_MIN, containerSize, ENTRY_TYPES, freeSpot, indexBlocks, insertBlock, isContainer, layoutMissing, normalizeName,
  removeBlocks, titleOf, unavailableReason, uniqueId, uniqueName, NODE_HEIGHT, NODE_WIDTH,
} from './graph';
import { Inspector } from './Inspector';
import { Palette } from './Palette';
import { RunPanel, inputValues, startInputs } from './RunPanel';
import { initialConfig, type BlockTypeInfo } from './schema';

type Tab = 'block' | 'run' | 'deploy';
const TABS: { id: Tab; label: string }[] = [{ id: 'block', label: 'Block' }, { id: 'run', label: 'Run' }, { id: 'deploy', label: 'Deploy' }];

const stripLabel = (m: string) => m.replace(/^Invalid workflow definition: /, '').replace(/^Block "[^"]*" \([^)]*\): /, '');

function issuesOf(err: unknown): DefinitionIssue[] | null {
  if (!(err instanceof ApiError) || err.status !== 400) return null;
  const details = (err.body as { details?: unknown })?.details;
  return Array.isArray(details) ? (details as DefinitionIssue[]) : [{ message: err.message }];
}

export function Editor({ initial, types }: { initial: Workflow; types: BlockTypeInfo[] }) {
  const { role } = useSession();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const canWrite = roleAllows(role, 'write');
  const canDeploy = roleAllows(role, 'admin');
  const id = initial.id;

  const wfQ = useQuery({ queryKey: ['workflow', id], queryFn: () => getWorkflow(id), initialData: initial });
  const statusQ = useQuery({ queryKey: ['workflow-status', id], queryFn: () => workflowStatus(id) });
  const workflow = wfQ.data;

  const [name, setName] = useState(initial.name);
  const [def, setDef] = useState<Definition>(() => layoutMissing({ ...initial.definition, edges: initial.definition.edges ?? [] }));
  const [savedJson, setSavedJson] = useState(() => JSON.stringify({ name: initial.name, def: layoutMissing({ ...initial.definition, edges: initial.definition.edges ?? [] }) }));
  const [issues, setIssues] = useState<DefinitionIssue[]>([]);
  const [selection, setSelection] = useState<Selection>({ nodes: new Set(), edge: null });
  const [tab, setTab] = useState<Tab>('block');
  const [runValues, setRunValues] = useState<Record<string, string>>({});
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [fitSignal, setFitSignal] = useState(0);
  const dirty = JSON.stringify({ name, def }) !== savedJson;

  // leaving the page with unsaved changes asks first: closing the tab, and following a link in the app
  useEffect(() => {
    if (!dirty) return;
    const onBeforeUnload = (e: BeforeUnloadEvent) => { e.preventDefault(); };
    const onClick = (e: MouseEvent) => {
      const a = (e.target as Element | null)?.closest?.('a[href]') as HTMLAnchorElement | null;
      if (!a || a.target === '_blank' || a.origin !== window.location.origin || a.pathname === window.location.pathname) return;
      if (!window.confirm('Leave this workflow? Your unsaved changes will be lost.')) {
        e.preventDefault();
        e.stopPropagation();
      }
    };
    window.addEventListener('beforeunload', onBeforeUnload);
    document.addEventListener('click', onClick, true);
    return () => {
      window.removeEventListener('beforeunload', onBeforeUnload);
      document.removeEventListener('click', onClick, true);
    };
  }, [dirty]);

  const refresh = useCallback(() => {
    void qc.invalidateQueries({ queryKey: ['workflow', id] });
    void qc.invalidateQueries({ queryKey: ['workflow-status', id] });
    void qc.invalidateQueries({ queryKey: ['workflow-versions', id] });
    void qc.invalidateQueries({ queryKey: ['workflows'] });
  }, [qc, id]);

  // the saved draft is the one sent, not whatever the canvas holds when the answer arrives
  const save = useMutation({
    mutationFn: (draft: { name: string; def: Definition }) => saveWorkflow(id, { name: draft.name.trim() || initial.name, definition: draft.def }),
    onSuccess: (_w, draft) => { setSavedJson(JSON.stringify(draft)); setIssues([]); refresh(); },
    onError: (err) => { const list = issuesOf(err); if (list) { setIssues(list); setTab('block'); } },
  });
  const deploy = useMutation({
    mutationFn: async () => {
      if (dirty) await save.mutateAsync({ name, def });
      return deployWorkflow(id);
    },
    onSuccess: refresh,
  });
  const undeploy = useMutation({ mutationFn: () => undeployWorkflow(id), onSuccess: refresh });
  const rollback = useMutation({ mutationFn: (v: number) => rollbackWorkflow(id, v), onSuccess: refresh });
  const remove = useMutation({ mutationFn: () => deleteWorkflow(id), onSuccess: () => { void qc.invalidateQueries({ queryKey: ['workflows'] }); navigate('/workflows'); } });

  // a draft run saves the canvas first; a refused save shows its issues on the blocks (save's onError)
  const saveDraft = useCallback(async () => {
    try {
      await save.mutateAsync({ name, def });
      return true;
    } catch {
      return false;
    }
  }, [save, name, def]);
  const onDraftRefused = useCallback((err: unknown) => {
    const details = err instanceof ApiError ? (err.body as { details?: unknown })?.details : undefined;
    if (Array.isArray(details)) setIssues(details as DefinitionIssue[]);
  }, []);

  // Ctrl/Cmd+S saves
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 's') {
        e.preventDefault();
        if (canWrite && !save.isPending) save.mutate({ name, def });
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [canWrite, save, name, def]);

  const issuesByBlock = useMemo(() => {
    const m = new Map<string, string[]>();
    for (const i of issues) if (i.blockId) m.set(i.blockId, [...(m.get(i.blockId) ?? []), stripLabel(i.message)]);
    return m;
  }, [issues]);

  const selectedId = selection.nodes.size === 1 ? [...selection.nodes][0] : null;
  const select = useCallback((blockId: string | null) => {
    setSelection({ nodes: blockId ? new Set([blockId]) : new Set(), edge: null });
    if (blockId) setTab('block');
  }, []);

  const addBlock = useCallback((type: string, position?: { x: number; y: number }, parentIdIn?: string | null, preset?: BlockPreset) => {
    const fromPalette = !position;
    // a drop bypasses the palette's check; the server would refuse the result at save
    if (unavailableReason(type, def.blocks)) return;
    const index = indexBlocks(def.blocks);
    const ids = new Set(index.keys());
    const names = new Set([...index.values()].map((l) => normalizeName(l.block.name)));
    const info = types.find((t) => t.type === type);
    const block: BlockDef = {
      id: uniqueId(type, ids),
      type,
      name: uniqueName(preset?.name ?? titleOf(type), names),
      config: preset?.config ?? initialConfig(type, info?.config ?? {}),
      ...(isContainer({ type }) ? { blocks: [], size: { ...CONTAINER_MIN } } : {}),
    };
    // Entry blocks live at the top level and take no incoming edge, so they never join the selection.
    const entry = ENTRY_TYPES.has(type);
    let parentId = entry ? null : (parentIdIn ?? null);
    let edges = def.edges;
    const sel = selectedId && !entry ? index.get(selectedId) : undefined;
    if (!position) {
      if (sel && isContainer(sel.block) && !isContainer(block)) {
        // into the selected container, after its last child
        parentId = sel.block.id;
        const kids = sel.block.blocks ?? [];
        const last = kids[kids.length - 1];
        position = last?.position ? { x: last.position.x + NODE_WIDTH + 60, y: last.position.y } : { x: 30, y: 50 };
      } else if (sel) {
        // beside the selected block, joined to it when it has a plain output
        parentId = sel.parentId;
        const p = sel.block.position ?? { x: 0, y: 0 };
        const w = isContainer(sel.block) ? containerSize(sel.block).width : NODE_WIDTH;
        position = { x: p.x + w + 60, y: p.y };
        if (branchHandles(sel.block).length === 0 && !['response'].includes(sel.block.type)) edges = [...edges, { from: sel.block.id, to: block.id }];
      } else {
        const bottom = Math.max(0, ...def.blocks.map((b) => (b.position?.y ?? 0) + (isContainer(b) ? containerSize(b).height : NODE_HEIGHT)));
        position = { x: 60, y: def.blocks.length ? bottom + 40 : 60 };
      }
    }
    if (fromPalette) {
      const siblings = parentId ? (index.get(parentId)?.block.blocks ?? []) : def.blocks;
      position = freeSpot(position, isContainer(block) ? containerSize(block) : { width: NODE_WIDTH, height: NODE_HEIGHT }, siblings);
    }
    setDef({ ...def, blocks: insertBlock(def.blocks, { ...block, position }, parentId), edges });
    setSelection({ nodes: new Set([block.id]), edge: null });
    setTab('block');
    if (fromPalette) setFitSignal((n) => n + 1);
  }, [def, selectedId, types]);

  const deleteBlock = useCallback((blockId: string) => {
    const { blocks, removed } = removeBlocks(def.blocks, new Set([blockId]));
    setDef({ ...def, blocks, edges: def.edges.filter((e) => !removed.has(e.from) && !removed.has(e.to)) });
    setSelection({ nodes: new Set(), edge: null });
  }, [def]);

  const fields = startInputs(def);
  const unplaced = issues.filter((i) => !i.blockId);
  const busyDeploy = deploy.isPending || undeploy.isPending || rollback.isPending;

  return (
    <div className="editor">
      <div className="editor-toolbar">
        <Link className="back-link" to="/workflows">← Workflows</Link>
        <h1 className="sr-only">Edit workflow {name}</h1>
        <label htmlFor="wf-name" className="sr-only">Workflow name</label>
        <input id="wf-name" className="input title-input" size={Math.max(8, name.length + 2)} value={name} maxLength={200} disabled={!canWrite} onChange={(e) => setName(e.target.value)} />
        {workflow.isDeployed ? <StatusBadge status="deployed" label={`Deployed v${workflow.version}`} /> : <StatusBadge status="draft" label="Not deployed" />}
        {dirty ? <span className="badge badge-warn" role="status">Unsaved changes</span> : save.isSuccess ? <span className="badge badge-ok" role="status">Saved</span> : null}
        {!canWrite ? <span className="muted small">Read only: your role here is {role}.</span> : null}
        <div className="topbar-spacer" />
        {canWrite ? <Button variant="primary" busy={save.isPending} onClick={() => save.mutate({ name, def })} title="Save (Ctrl+S)">Save</Button> : null}
        {canDeploy ? <Button busy={deploy.isPending} onClick={() => deploy.mutate()}>{dirty ? 'Save and deploy' : 'Deploy'}</Button> : null}
        {canWrite ? <Button variant="ghost" onClick={() => setConfirmDelete(true)}>Delete</Button> : null}
      </div>
      <ErrorBanner error={save.error && !issuesOf(save.error) ? save.error : null} title="Not saved" />
      {issues.length > 0 ? (
        <div className="banner banner-error" role="alert">
          <div>
            <strong>The server refused the definition ({issues.length} problem{issues.length > 1 ? 's' : ''}).</strong>
            <ul className="issue-list">
              {issues.map((i, n) => (
                <li key={n}>
                  {i.blockId ? <button type="button" className="link-button" onClick={() => select(i.blockId!)}>{indexBlocks(def.blocks).get(i.blockId)?.block.name ?? i.blockId}</button> : null}
                  {i.blockId ? ': ' : ''}{i.blockId ? stripLabel(i.message) : i.message}
                </li>
              ))}
            </ul>
          </div>
        </div>
      ) : null}
      <div className="editor-body">
        <Palette types={types} onAdd={(t, preset) => addBlock(t, undefined, null, preset)} disabled={!canWrite} unavailable={(t) => unavailableReason(t, def.blocks)} />
        <ReactFlowProvider>
          <Canvas
            definition={def}
            onChange={setDef}
            selection={selection}
            onSelect={(s) => { setSelection(s); if (s.nodes.size === 1) setTab('block'); }}
            issuesByBlock={issuesByBlock}
            readOnly={!canWrite}
            fitSignal={fitSignal}
            onDropType={(t, p, parent, preset) => addBlock(t, p, parent, preset)}
          />
        </ReactFlowProvider>
        <aside className="side-panel" aria-label="Details">
          <div role="tablist" aria-label="Panels" className="tabs">
            {TABS.map((t) => (
              <button key={t.id} type="button" role="tab" id={`tab-${t.id}`} aria-selected={tab === t.id} aria-controls={`panel-${t.id}`} tabIndex={tab === t.id ? 0 : -1}
                className={`tab${tab === t.id ? ' active' : ''}`} onClick={() => setTab(t.id)}
                onKeyDown={(e) => {
                  const i = TABS.findIndex((x) => x.id === tab);
                  if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
                    const next = TABS[(i + (e.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length];
                    setTab(next.id);
                    document.getElementById(`tab-${next.id}`)?.focus();
                  }
                }}>
                {t.label}
              </button>
            ))}
          </div>
          <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="tab-panel">
            {tab === 'block' ? (
              <>
                {unplaced.length > 0 && !selectedId ? unplaced.map((i, n) => <div key={n} className="banner banner-error">{i.message}</div>) : null}
                <Inspector key={selectedId ?? 'workflow'} definition={def} onChange={setDef} blockId={selectedId} types={types} issues={issues} readOnly={!canWrite} onSelect={select} onDelete={deleteBlock} />
              </>
            ) : null}
            {tab === 'run' ? (
              <RunPanel workflowId={id} definition={def} canWrite={canWrite} dirty={dirty} deployedVersion={workflow.isDeployed ? workflow.version : null}
                draftDiffers={!!statusQ.data?.needsRedeployment} saveDraft={saveDraft} onDraftRefused={onDraftRefused} values={runValues} onValues={setRunValues} />
            ) : null}
            {tab === 'deploy' ? (
              <DeployPanel workflow={workflow} status={statusQ.data} dirty={dirty} canDeploy={canDeploy} busy={busyDeploy}
                error={deploy.error ?? undeploy.error ?? rollback.error} exampleInputs={inputValues(fields, runValues)}
                onDeploy={() => deploy.mutate()} onUndeploy={() => undeploy.mutate()} onRollback={(v) => rollback.mutate(v)} />
            ) : null}
          </div>
        </aside>
      </div>
      <ConfirmDialog
        open={confirmDelete}
        title={`Delete ${name}?`}
        message="The workflow, its versions, webhook and schedule are deleted. Past runs stay in the logs."
        confirmLabel="Delete workflow"
        danger
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => remove.mutate()}
        onCancel={() => setConfirmDelete(false)}
      />
    </div>
  );
}
