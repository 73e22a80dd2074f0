// Running the workflow from the editor: an input form from the start block's declared inputs, then the
// run's output, error, duration and a link to its timeline. Members who may edit run the saved draft
// (not a deploy: logged as a manual run, billed like any run); anyone may run the deployed version.
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
  /** The caller may edit (write role): runs the draft. */
  canWrite: boolean;
  /** The canvas has unsaved changes (a draft run saves them first). */
  dirty: boolean;
  /** The active version's number; null while not deployed. */
  deployedVersion: number | null;
  /** The saved draft differs from the deployed version. */
  draftDiffers: boolean;
  /** Saves the canvas; resolves false when the server refused it (the editor shows why). */
  saveDraft(): Promise<boolean>;
  /** A draft run refused before it started (e.g. the draft does not validate). */
  onDraftRefused(err: unknown): void;
  values: Record<string, string>;
  onValues(v: Record<string, string>): void;
}

type Ran = { answer: RunAnswer; what: string };

export function RunPanel({ workflowId, definition, canWrite, dirty, deployedVersion, draftDiffers, saveDraft, onDraftRefused, values, onValues }: RunPanelProps) {
  const fields = startInputs(definition);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [ran, setRan] = useState<Ran | null>(null);
  const result = ran?.answer ?? null;

  const run = async (draft: boolean) => {
    setBusy(true);
    setError(null);
    setRan(null);
    try {
      if (draft && dirty && !(await saveDraft())) return;
      const answer = await executeWorkflow(workflowId, inputValues(fields, values), { draft });
      setRan({ answer, what: draft ? 'the draft' : `deployed v${deployedVersion}` });
    } catch (err) {
      setError(err);
      if (draft) onDraftRefused(err);
    } finally {
      setBusy(false);
    }
  };
  // Enter runs what the first button runs: the draft for editors, else the deployed version.
  const submit = (e: FormEvent) => { e.preventDefault(); void run(canWrite); };

  const envelope = result && !result.custom ? (result.body as { success?: boolean; output?: unknown; error?: unknown; status?: string; metadata?: { duration?: number } }) : null;
  const ok = result ? (result.custom ? result.httpStatus < 400 : envelope?.success !== false) : false;
  const shownOutput = result ? (result.custom ? result.body : envelope?.output) : null;

  return (
    <form className="stack" onSubmit={submit} aria-label="Run the workflow">
      <h2>Run</h2>
      {fields.length === 0 ? <p className="muted small">The start block declares no inputs.</p> : fields.map((f) => (
        <InputControl key={f.name} field={f} value={values[f.name] ?? (f.default !== undefined ? (typeof f.default === 'string' ? f.default : JSON.stringify(f.default)) : '')} onChange={(v) => onValues({ ...values, [f.name]: v })} />
      ))}
      {canWrite ? (
        <p className="muted small">
          Runs the saved draft{dirty ? ' (your unsaved changes are saved first)' : ''} without deploying it: a manual run, billed like any run.
          {deployedVersion !== null && (dirty || draftDiffers) ? ` The API, webhooks and schedules still run v${deployedVersion}.` : ''}
        </p>
      ) : (
        <div className="banner banner-info small">
          {deployedVersion !== null ? `Runs the deployed version v${deployedVersion}.` : 'Not deployed yet.'} Your role can run the deployed version only; members with write access run the draft.
        </div>
      )}
      <div className="row gap">
        {canWrite ? <Button type="submit" variant="primary" busy={busy}>{dirty ? 'Save and run draft' : 'Run draft'}</Button> : null}
        {deployedVersion !== null ? (
          <Button type={canWrite ? 'button' : 'submit'} variant={canWrite ? 'secondary' : 'primary'} disabled={canWrite && busy} busy={!canWrite && busy} onClick={canWrite ? () => void run(false) : undefined}>
            Run deployed v{deployedVersion}
          </Button>
        ) : null}
      </div>
      <ErrorBanner error={error} />
      {result ? (
        <section className="run-result stack" aria-live="polite" aria-label="Run result">
          <div className="row gap">
            <StatusBadge status={envelope?.status === 'paused' ? 'paused' : ok ? 'completed' : 'failed'} />
            <span className="small">Ran {ran?.what}</span>
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
