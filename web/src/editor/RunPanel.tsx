// Running the workflow from the editor: an input form from the start block's declared inputs, then the
// run's output, error, duration and a link to its timeline.
import { useId, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { executeWorkflow, type Definition, type RunAnswer } from '../api/workflows';
import { Button, ErrorBanner, StatusBadge, formatDuration } from '../ui';

interface InputField { name: string; type: string; required?: boolean; description?: string; default?: unknown }

export function startInputs(def: Definition): InputField[] {
  const start = def.blocks.find((b) => b.type === 'start');
  const f = start?.config?.inputFormat;
  return Array.isArray(f) ? (f as InputField[]).filter((x) => typeof x?.name === 'string' && x.name) : [];
}

function coerce(field: InputField, text: string): unknown {
  if (text === '') return undefined;
  if (field.type === 'number') return Number(text);
  if (field.type === 'object' || field.type === 'array' || field.type === 'files') {
    try { return JSON.parse(text); } catch { return text; }
  }
  return text;
}

function InputControl({ field, value, onChange }: { field: InputField; value: string; onChange(v: string): void }) {
  const id = useId();
  const hint = [field.type, field.required ? 'required' : '', field.description ?? ''].filter(Boolean).join(' · ');
  if (field.type === 'boolean') {
    return <label className="checkbox"><input type="checkbox" checked={value === 'true'} onChange={(e) => onChange(e.target.checked ? 'true' : 'false')} /> {field.name}</label>;
  }
  const multi = field.type === 'object' || field.type === 'array' || field.type === 'files';
  return (
    <div className="field">
      <label className="field-label" htmlFor={id}>{field.name}</label>
      {multi
        ? <textarea id={id} className="input mono" rows={3} value={value} onChange={(e) => onChange(e.target.value)} aria-describedby={`${id}-h`} placeholder={field.type === 'array' ? '[1, 2, 3]' : '{"key": "value"}'} />
        : <input id={id} className="input" type={field.type === 'number' ? 'number' : 'text'} value={value} onChange={(e) => onChange(e.target.value)} aria-describedby={`${id}-h`} required={field.required} />}
      <div className="field-hint" id={`${id}-h`}>{hint}</div>
    </div>
  );
}

export function inputValues(fields: InputField[], values: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = f.type === 'boolean' ? (values[f.name] === undefined ? undefined : values[f.name] === 'true') : coerce(f, values[f.name] ?? '');
    if (v !== undefined) out[f.name] = v;
  }
  return out;
}

interface RunPanelProps {
  workflowId: string;
  definition: Definition;
  /** Why the deployed version would not be what the canvas shows (unsaved, not deployed, changed since). */
  staleReason: string | null;
  canDeploy: boolean;
  /** Saves and deploys the draft; resolves when the new version is active. */
  deployDraft(): Promise<boolean>;
  values: Record<string, string>;
  onValues(v: Record<string, string>): void;
}

export function RunPanel({ workflowId, definition, staleReason, canDeploy, deployDraft, values, onValues }: RunPanelProps) {
  const fields = startInputs(definition);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [result, setResult] = useState<RunAnswer | null>(null);

  const run = async (deployFirst: boolean) => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      if (deployFirst && !(await deployDraft())) return;
      setResult(await executeWorkflow(workflowId, inputValues(fields, values)));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: FormEvent) => { e.preventDefault(); void run(!!staleReason && canDeploy); };

  const envelope = result && !result.custom ? (result.body as { success?: boolean; output?: unknown; error?: unknown; status?: string; metadata?: { duration?: number } }) : null;
  const ok = result ? (result.custom ? result.httpStatus < 400 : envelope?.success !== false) : false;
  const shownOutput = result ? (result.custom ? result.body : envelope?.output) : null;

  return (
    <form className="stack" onSubmit={submit} aria-label="Run the workflow">
      <h2>Run</h2>
      {fields.length === 0 ? <p className="muted small">The start block declares no inputs.</p> : fields.map((f) => (
        <InputControl key={f.name} field={f} value={values[f.name] ?? (f.default !== undefined ? (typeof f.default === 'string' ? f.default : JSON.stringify(f.default)) : '')} onChange={(v) => onValues({ ...values, [f.name]: v })} />
      ))}
      {staleReason ? (
        <div className="banner banner-info small">
          {staleReason} {canDeploy ? 'Running deploys the draft as a new version first.' : 'Ask a workspace admin to deploy it; a run uses the deployed version.'}
        </div>
      ) : null}
      <div className="row gap">
        <Button type="submit" variant="primary" busy={busy} disabled={!!staleReason && !canDeploy && staleReason.startsWith('Not deployed')}>
          {staleReason && canDeploy ? 'Deploy and run' : 'Run'}
        </Button>
        {staleReason && canDeploy && !staleReason.startsWith('Not deployed') ? <Button disabled={busy} onClick={() => void run(false)}>Run deployed version</Button> : null}
      </div>
      <ErrorBanner error={error} />
      {result ? (
        <section className="run-result stack" aria-live="polite" aria-label="Run result">
          <div className="row gap">
            <StatusBadge status={envelope?.status === 'paused' ? 'paused' : ok ? 'completed' : 'failed'} />
            {envelope?.metadata?.duration !== undefined ? <span className="muted small">{formatDuration(envelope.metadata.duration)}</span> : null}
            {result.executionId ? <Link to={`/runs/${result.executionId}`}>Open the run's timeline</Link> : null}
          </div>
          {envelope?.error ? <div className="banner banner-error" role="alert">{typeof envelope.error === 'string' ? envelope.error : JSON.stringify(envelope.error)}</div> : null}
          <div>
            <div className="field-label">{result.custom ? `Response (HTTP ${result.httpStatus}, set by a response block)` : 'Output'}</div>
            <pre data-testid="run-output">{JSON.stringify(shownOutput ?? null, null, 2)}</pre>
          </div>
        </section>
      ) : null}
    </form>
  );
}
