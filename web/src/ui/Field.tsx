// Form fields with a visible label tied to the control.
// Field props: label (text), hint? (help text under the control), error? (message, sets aria-invalid),
//   htmlFor? (id of the control; Input/Select/TextArea inside a Field get one automatically via useId
//   when you use the *Field shorthands below), children (the control).
// InputField / SelectField / TextAreaField: label, hint?, error? + every prop of the native control
//   (SelectField also takes options: {value, label}[]).
import { useId, type InputHTMLAttributes, type ReactNode, type SelectHTMLAttributes, type TextareaHTMLAttributes } from 'react';

export function Field({ label, hint, error, htmlFor, children }: { label: ReactNode; hint?: ReactNode; error?: ReactNode; htmlFor?: string; children: ReactNode }) {
  return (
    <div className={`field${error ? ' field-invalid' : ''}`}>
      <label className="field-label" htmlFor={htmlFor}>{label}</label>
      {children}
      {hint ? <div className="field-hint" id={htmlFor ? `${htmlFor}-hint` : undefined}>{hint}</div> : null}
      {error ? <div className="field-error" role="alert" id={htmlFor ? `${htmlFor}-error` : undefined}>{error}</div> : null}
    </div>
  );
}

interface Labelled { label: ReactNode; hint?: ReactNode; error?: ReactNode }

function describedBy(id: string, hint: unknown, error: unknown): string | undefined {
  const ids = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean);
  return ids.length ? ids.join(' ') : undefined;
}

export function InputField({ label, hint, error, id, className, ...rest }: Labelled & InputHTMLAttributes<HTMLInputElement>) {
  const auto = useId();
  const cid = id ?? auto;
  return (
    <Field label={label} hint={hint} error={error} htmlFor={cid}>
      <input id={cid} className={`input ${className ?? ''}`} aria-invalid={error ? true : undefined} aria-describedby={describedBy(cid, hint, error)} {...rest} />
    </Field>
  );
}

export function SelectField({ label, hint, error, id, options, className, ...rest }: Labelled & SelectHTMLAttributes<HTMLSelectElement> & { options: { value: string; label: string }[] }) {
  const auto = useId();
  const cid = id ?? auto;
  return (
    <Field label={label} hint={hint} error={error} htmlFor={cid}>
      <select id={cid} className={`input ${className ?? ''}`} aria-invalid={error ? true : undefined} aria-describedby={describedBy(cid, hint, error)} {...rest}>
        {options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
      </select>
    </Field>
  );
}

export function TextAreaField({ label, hint, error, id, className, ...rest }: Labelled & TextareaHTMLAttributes<HTMLTextAreaElement>) {
  const auto = useId();
  const cid = id ?? auto;
  return (
    <Field label={label} hint={hint} error={error} htmlFor={cid}>
      <textarea id={cid} className={`input ${className ?? ''}`} aria-invalid={error ? true : undefined} aria-describedby={describedBy(cid, hint, error)} {...rest} />
    </Field>
  );
}
