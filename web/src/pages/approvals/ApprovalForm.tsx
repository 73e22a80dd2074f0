// The form of one pause point (a human block): its message and fields, answered through the resume API.
import { useId, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useMutation } from '@tanstack/react-query';
import { Button, ErrorBanner, InputField, TextAreaField } from '../../ui';
import { convertField, resume, type HumanField, type PausePoint, type ResumeAnswer } from './api';

function BooleanField({ field, value, onChange, error }: { field: HumanField; value: string | boolean; onChange(v: boolean): void; error?: string }) {
  const id = useId();
  return (
    <fieldset className={`field approval-bool${error ? ' field-invalid' : ''}`} aria-describedby={error ? `${id}-err` : undefined}>
      <legend className="field-label">{field.name}{field.required ? ' (required)' : ''}</legend>
      {field.description ? <div className="field-hint">{field.description}</div> : null}
      <div className="row gap">
        <label className="checkbox"><input type="radio" name={id} checked={value === true} onChange={() => onChange(true)} /> Yes</label>
        <label className="checkbox"><input type="radio" name={id} checked={value === false} onChange={() => onChange(false)} /> No</label>
      </div>
      {error ? <div className="field-error" id={`${id}-err`} role="alert">{error}</div> : null}
    </fieldset>
  );
}

export function outcomeText(a: ResumeAnswer): string {
  if (a.status === 'queued' && a.queuePosition) return `Answer queued behind another answer (position ${a.queuePosition}).`;
  if (a.jobId) return 'Answer received: the run continues in the background.';
  if (a.status === 'failed') return `Answer received, but the run then failed: ${a.error ?? 'no reason given'}.`;
  if (a.status === 'paused') return 'Answer received: the run is waiting for another approval.';
  return `Answer received: the run is ${a.status ?? 'continuing'}.`;
}

/** The outcome of an answer, with a link to the run it continued. */
export function AnswerOutcome({ answer, executionId }: { answer: ResumeAnswer; executionId: string }) {
  const next = answer.executionId && answer.executionId !== executionId ? answer.executionId : executionId;
  return (
    <div className="banner banner-ok" role="status">
      <div>{outcomeText(answer)} <Link to={`/runs/${encodeURIComponent(next)}`}>Open the run</Link></div>
    </div>
  );
}

export function ApprovalForm({ workflowId, executionId, point, onAnswered }: {
  workflowId: string; executionId: string; point: PausePoint; onAnswered(answer: ResumeAnswer): void;
}) {
  const fields = point.response?.data?.fields ?? [];
  const [values, setValues] = useState<Record<string, string | boolean>>(() => Object.fromEntries(fields.map((f) => [f.name, ''])));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const submit = useMutation({
    mutationFn: (input: Record<string, unknown>) => resume(workflowId, executionId, point.contextId, input),
    onSuccess: (a) => onAnswered(a),
  });

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const input: Record<string, unknown> = {};
    const found: Record<string, string> = {};
    for (const f of fields) {
      const raw = values[f.name] ?? '';
      if (f.type === 'boolean' && raw === '') {
        if (f.required) found[f.name] = `${f.name} is required: choose Yes or No`;
        continue;
      }
      const { value, error } = convertField(f, raw);
      if (error) found[f.name] = error;
      else if (value !== undefined) input[f.name] = value;
    }
    setErrors(found);
    if (Object.keys(found).length === 0) submit.mutate(input);
  };

  const set = (name: string, v: string | boolean) => setValues((prev) => ({ ...prev, [name]: v }));
  return (
    <form className="stack approval-form" onSubmit={onSubmit} noValidate aria-label={`Answer ${point.blockId}`}>
      {fields.length === 0 ? <p className="muted">This approval asks for no fields: submit to continue the run.</p> : null}
      {fields.map((f) => {
        const label = `${f.name}${f.required ? ' (required)' : ''}`;
        const common = { label, hint: f.description ?? (f.type === 'object' || f.type === 'array' || f.type === 'files' ? `JSON ${f.type === 'object' ? 'object' : 'array'}` : undefined), error: errors[f.name] };
        if (f.type === 'boolean') return <BooleanField key={f.name} field={f} value={values[f.name] ?? ''} onChange={(v) => set(f.name, v)} error={errors[f.name]} />;
        if (f.type === 'object' || f.type === 'array' || f.type === 'files') {
          return <TextAreaField key={f.name} {...common} value={String(values[f.name] ?? '')} onChange={(e) => set(f.name, e.target.value)} rows={3} />;
        }
        return (
          <InputField key={f.name} {...common} type={f.type === 'number' ? 'number' : 'text'} inputMode={f.type === 'number' ? 'decimal' : undefined}
            value={String(values[f.name] ?? '')} onChange={(e) => set(f.name, e.target.value)} required={f.required} />
        );
      })}
      <ErrorBanner error={submit.error} />
      <div className="row gap">
        <Button type="submit" variant="primary" busy={submit.isPending}>Submit answer</Button>
      </div>
    </form>
  );
}
