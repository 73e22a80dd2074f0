// A form generated from a block type's config JSON Schema (the one the server validates with): text
// fields complete references, enums are selects, lists of objects get add/remove, loops' and parallels'
// `kind` picks the variant, and anything free-form is edited as JSON.
import { useId, useState, type ReactNode } from 'react';
import { Button } from '../ui';
import type { RefSuggestion } from './references';
import { RefInput } from './RefInput';
import type { JsonSchema } from './schema';

type Value = unknown;
type Obj = Record<string, unknown>;

export interface FormContext {
  suggestions: RefSuggestion[];
  /** Field errors from the server, by path inside the config ("code", "conditions[0].expression"). */
  errors: Record<string, string>;
}

const MULTILINE = new Set(['code', 'expression', 'prompt', 'userPrompt', 'systemPrompt', 'content', 'message', 'condition', 'query', 'description']);
const MONO = new Set(['code', 'expression', 'condition']);

export function humanize(key: string): string {
  const s = key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ').toLowerCase();
  return s.charAt(0).toUpperCase() + s.slice(1).replace(/\burl\b/g, 'URL').replace(/\bms\b/g, '(ms)').replace(/\bid\b/g, 'ID').replace(/\bids\b/g, 'IDs');
}

const typesOf = (s: JsonSchema): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function FieldShell({ id, label, hint, error, required, children }: { id: string; label: ReactNode; hint?: string; error?: string; required?: boolean; children: ReactNode }) {
  return (
    <div className={`field${error ? ' field-invalid' : ''}`}>
      <label className="field-label" htmlFor={id}>{label}{required ? <span aria-hidden="true"> *</span> : null}</label>
      {children}
      {hint ? <div className="field-hint" id={`${id}-hint`}>{hint}</div> : null}
      {error ? <div className="field-error" id={`${id}-error`} role="alert">{error}</div> : null}
    </div>
  );
}

const describedBy = (id: string, hint?: string, error?: string) => [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;

/** JSON text edited freely; parsed when the field loses focus. Text that is not JSON is kept as a string where strings are allowed. */
export function JsonField({ id, value, onChange, allowText, hint, error, label, required, ctx }: {
  id: string; value: Value; onChange(v: Value): void; allowText: boolean; hint?: string; error?: string; label: ReactNode; required?: boolean; ctx: FormContext;
}) {
  const shown = value === undefined ? '' : typeof value === 'string' && allowText ? value : JSON.stringify(value, null, 2);
  const [text, setText] = useState<string | null>(null);
  const [parseError, setParseError] = useState<string | null>(null);
  const commit = (t: string) => {
    if (t.trim() === '') { onChange(undefined); setParseError(null); return; }
    try {
      onChange(JSON.parse(t));
      setParseError(null);
    } catch {
      if (allowText) { onChange(t); setParseError(null); } else setParseError('Not valid JSON');
    }
  };
  const err = parseError ?? error;
  const fullHint = [hint, allowText ? 'JSON, or text such as a <reference>.' : 'JSON.'].filter(Boolean).join(' ');
  return (
    <FieldShell id={id} label={label} hint={fullHint} error={err ?? undefined} required={required}>
      <div onBlur={() => { if (text !== null) { commit(text); setText(null); } }}>
        <RefInput id={id} multiline rows={3} mono value={text ?? shown} onChange={setText} suggestions={ctx.suggestions} describedBy={describedBy(id, fullHint, err ?? undefined)} invalid={!!err} />
      </div>
    </FieldShell>
  );
}

interface FieldProps { name: string; schema: JsonSchema; value: Value; onChange(v: Value): void; required: boolean; path: string; ctx: FormContext }

function SchemaField({ name, schema, value, onChange, required, path, ctx }: FieldProps) {
  const id = useId();
  const label = humanize(name);
  const hint = schema.description;
  const error = ctx.errors[path];
  const types = typesOf(schema);

  if (schema.const !== undefined) return null;

  // "a number, or text such as a reference"
  if (schema.anyOf) {
    const kinds = schema.anyOf.flatMap(typesOf);
    if (kinds.includes('string') && (kinds.includes('number') || kinds.includes('integer')) && !kinds.includes('object') && !kinds.includes('array')) {
      const text = value === undefined || value === null ? '' : String(value);
      return (
        <FieldShell id={id} label={label} hint={hint ?? 'A number, or a <reference>.'} error={error} required={required}>
          <RefInput id={id} value={text} suggestions={ctx.suggestions} invalid={!!error} describedBy={describedBy(id, hint ?? 'x', error)}
            onChange={(t) => onChange(t.trim() === '' ? undefined : /^-?\d+(\.\d+)?$/.test(t.trim()) ? Number(t) : t)} />
        </FieldShell>
      );
    }
    return <JsonField id={id} label={label} value={value} onChange={onChange} allowText={kinds.includes('string')} hint={hint} error={error} required={required} ctx={ctx} />;
  }

  if (schema.enum) {
    const options = schema.enum.map(String);
    const current = value === undefined ? (schema.default !== undefined ? String(schema.default) : '') : String(value);
    return (
      <FieldShell id={id} label={label} hint={hint} error={error} required={required}>
        <select id={id} className="input" value={current} aria-describedby={describedBy(id, hint, error)} onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}>
          {!required && schema.default === undefined ? <option value="">(none)</option> : null}
          {options.map((o) => <option key={o} value={o}>{o}</option>)}
        </select>
      </FieldShell>
    );
  }

  if (types.includes('boolean')) {
    const checked = value === undefined ? schema.default === true : value === true;
    return (
      <div className="field">
        <label className="checkbox"><input id={id} type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} /> {label}</label>
        {hint ? <div className="field-hint">{hint}</div> : null}
        {error ? <div className="field-error" role="alert">{error}</div> : null}
      </div>
    );
  }

  if (types.includes('integer') || types.includes('number')) {
    return (
      <FieldShell id={id} label={label} hint={hint ?? (schema.default !== undefined ? `Default ${String(schema.default)}.` : undefined)} error={error} required={required}>
        <input id={id} className="input" type="number" inputMode="decimal" min={schema.minimum} max={schema.maximum} step={types.includes('integer') ? 1 : 'any'}
          placeholder={schema.default !== undefined ? String(schema.default) : undefined}
          value={typeof value === 'number' ? value : ''} aria-invalid={error ? true : undefined}
          onChange={(e) => onChange(e.target.value === '' ? undefined : Number(e.target.value))} />
      </FieldShell>
    );
  }

  if (types.includes('string')) {
    const multiline = MULTILINE.has(name) || (schema.maxLength ?? 0) > 10_000;
    return (
      <FieldShell id={id} label={label} hint={hint} error={error} required={required}>
        <RefInput id={id} value={typeof value === 'string' ? value : value === undefined ? '' : String(value)} onChange={(t) => onChange(t === '' && !required ? undefined : t)}
          suggestions={ctx.suggestions} multiline={multiline} rows={name === 'code' ? 8 : 3} mono={MONO.has(name)} invalid={!!error}
          describedBy={describedBy(id, hint, error)} required={required} />
      </FieldShell>
    );
  }

  if (types.includes('array') && schema.items && typesOf(schema.items).includes('object') && schema.items.properties) {
    return <ObjectList name={name} schema={schema} value={value} onChange={onChange} path={path} ctx={ctx} required={required} />;
  }

  if (types.includes('object') && schema.properties) {
    return (
      <fieldset className="fieldset">
        <legend>{label}</legend>
        <ObjectFields schema={schema} value={isObj(value) ? value : {}} onChange={onChange} path={path} ctx={ctx} />
      </fieldset>
    );
  }

  // records, free-form values and the rest
  return <JsonField id={id} label={label} value={value} onChange={onChange} allowText={types.length === 0 || types.includes('string')} hint={hint} error={error} required={required} ctx={ctx} />;
}

function ObjectList({ name, schema, value, onChange, path, ctx }: FieldProps) {
  const items = Array.isArray(value) ? (value as Obj[]) : [];
  const itemSchema = schema.items as JsonSchema;
  const label = humanize(name);
  const set = (i: number, v: Obj) => onChange(items.map((x, j) => (j === i ? v : x)));
  const first = itemSchema.required?.[0] ?? Object.keys(itemSchema.properties ?? {})[0];
  return (
    <fieldset className="fieldset">
      <legend>{label}</legend>
      {items.length === 0 ? <p className="muted small">None yet.</p> : null}
      {ctx.errors[path] ? <div className="field-error" role="alert">{ctx.errors[path]}</div> : null}
      {items.map((item, i) => (
        <div key={i} className="list-item">
          <ObjectFields schema={itemSchema} value={isObj(item) ? item : {}} onChange={(v) => set(i, v as Obj)} path={`${path}[${i}]`} ctx={ctx} />
          <Button size="sm" variant="ghost" aria-label={`Remove ${label.toLowerCase()} ${i + 1}${first && isObj(item) && item[first] ? ` (${String(item[first])})` : ''}`} onClick={() => onChange(items.filter((_, j) => j !== i))}>Remove</Button>
        </div>
      ))}
      <div>
        <Button size="sm" onClick={() => onChange([...items, first ? { [first]: itemSchema.properties?.[first]?.type === 'string' ? `${first === 'id' ? 'option' : 'field'}${items.length + 1}` : undefined } : {}])}>
          Add {label.toLowerCase().replace(/s$/, '')}
        </Button>
      </div>
    </fieldset>
  );
}

/** The fields of an object schema; `oneOf` variants with a `kind` constant become a kind selector. */
export function ObjectFields({ schema, value, onChange, path, ctx }: { schema: JsonSchema; value: Obj; onChange(v: Obj): void; path: string; ctx: FormContext }) {
  const kindId = useId();
  if (schema.oneOf && schema.oneOf.every((v) => v.properties?.kind?.const !== undefined)) {
    const variants = schema.oneOf;
    const kind = String(value.kind ?? variants[0].properties!.kind.const);
    const variant = variants.find((v) => v.properties!.kind.const === kind) ?? variants[0];
    return (
      <div className="stack">
        <div className="field">
          <label className="field-label" htmlFor={kindId}>Kind</label>
          <select id={kindId} className="input" value={kind} onChange={(e) => onChange({ kind: e.target.value })}>
            {variants.map((v) => <option key={String(v.properties!.kind.const)} value={String(v.properties!.kind.const)}>{String(v.properties!.kind.const)}</option>)}
          </select>
        </div>
        <ObjectFields schema={{ ...variant, oneOf: undefined }} value={{ ...value, kind }} onChange={onChange} path={path} ctx={ctx} />
      </div>
    );
  }
  const props = Object.entries(schema.properties ?? {});
  if (props.length === 0) return <p className="muted small">No settings.</p>;
  return (
    <div className="stack">
      {props.map(([key, s]) => (
        <SchemaField
          key={key}
          name={key}
          schema={s}
          value={value[key]}
          required={schema.required?.includes(key) ?? false}
          path={path ? `${path}.${key}` : key}
          ctx={ctx}
          onChange={(v) => {
            const next = { ...value };
            if (v === undefined) delete next[key];
            else next[key] = v;
            onChange(next);
          }}
        />
      ))}
    </div>
  );
}
