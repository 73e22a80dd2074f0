// The form of a `connector` block, generated from its operation's schemas (docs/architecture.md,
// Connectors): one field per path, query or header parameter and a JSON field for the body. Fields take
// references like every other block form: numbers are typed as text (a number, or a <reference>), objects
// and arrays as JSON or a reference; enums are a select and booleans a checkbox.
import { useId } from 'react';
import { useQuery } from '@tanstack/react-query';
import { listConnectors, type Connector } from '../pages/connectors/api';
import { useSession } from '../session';
import { JsonField, ObjectFields, type FormContext } from './SchemaForm';
import { parametersForm, typesOf } from './connector-schema';
import type { JsonSchema } from './schema';

type Obj = Record<string, unknown>;

export function ConnectorFields({ schema, value, onChange, ctx }: { schema: JsonSchema; value: Obj; onChange(v: Obj): void; ctx: FormContext }) {
  const { workspaceId } = useSession();
  const connectors = useQuery({ queryKey: ['connectors', workspaceId], queryFn: () => listConnectors(workspaceId), staleTime: 10_000 });
  const connectorSelect = useId();
  const operationSelect = useId();
  const bodyId = useId();
  const list: Connector[] = connectors.data ?? [];
  const connector = list.find((c) => c.id === value.connectorId);
  const op = connector?.operations.find((o) => o.operationId === value.operationId);
  const paramsSchema = op ? parametersForm(op.parameters, op.path) : null;
  const params = value.parameters && typeof value.parameters === 'object' && !Array.isArray(value.parameters) ? (value.parameters as Obj) : {};
  const timeoutSchema: JsonSchema = { type: 'object', properties: schema.properties?.timeoutMs ? { timeoutMs: schema.properties.timeoutMs } : {} };

  if (connectors.isPending) return <p className="muted small">Loading connectors…</p>;
  return (
    <div className="stack connector-form">
      <div className="grid-2">
        <div className="field">
          <label className="field-label" htmlFor={connectorSelect}>Connector</label>
          <select id={connectorSelect} className="input" value={connector ? connector.id : ''}
            onChange={(e) => { const c = list.find((x) => x.id === e.target.value); onChange({ connectorId: e.target.value, operationId: c?.operations[0]?.operationId ?? '', parameters: {} }); }}>
            {!connector ? <option value="">{value.connectorId ? `Unknown (${String(value.connectorId)})` : 'Choose a connector'}</option> : null}
            {list.map((c) => <option key={c.id} value={c.id}>{c.name}</option>)}
          </select>
        </div>
        <div className="field">
          <label className="field-label" htmlFor={operationSelect}>Operation</label>
          <select id={operationSelect} className="input" value={op ? op.operationId : ''} disabled={!connector}
            onChange={(e) => onChange({ connectorId: value.connectorId, operationId: e.target.value, parameters: {}, ...(value.timeoutMs !== undefined ? { timeoutMs: value.timeoutMs } : {}) })}>
            {!op ? <option value="">{value.operationId ? `Unknown (${String(value.operationId)})` : 'Choose an operation'}</option> : null}
            {connector?.operations.map((o) => <option key={o.operationId} value={o.operationId}>{o.operationId} ({o.method} {o.path})</option>)}
          </select>
        </div>
      </div>
      {connectors.error ? <div className="banner banner-error" role="alert">Could not load the connectors: {connectors.error instanceof Error ? connectors.error.message : String(connectors.error)}</div> : null}
      {!connectors.error && !connector ? <div className="banner banner-error" role="alert">This block names a connector the workspace does not have; choose one, or add it on the Connectors page.</div> : null}
      {connector && !op ? <div className="banner banner-error" role="alert">{connector.name} has no operation {String(value.operationId ?? '')}; choose one.</div> : null}
      {op ? (
        <>
          <p className="muted small"><code>{op.method} {op.path}</code>{op.summary ? ` · ${op.summary}` : ''}</p>
          <fieldset className="fieldset">
            <legend>Parameters</legend>
            {Object.keys(paramsSchema?.properties ?? {}).length === 0 ? <p className="muted small">This operation takes no parameters.</p> : (
              <ObjectFields schema={paramsSchema!} value={params} path="parameters" ctx={ctx}
                onChange={(p) => onChange({ ...value, parameters: p })} />
            )}
          </fieldset>
          {op.requestBody ? (
            <JsonField id={bodyId} label="Body" value={value.body} allowText ctx={ctx} error={ctx.errors.body}
              hint={bodySchemaHint(op.requestBody)}
              onChange={(b) => { const next = { ...value }; if (b === undefined) delete next.body; else next.body = b; onChange(next); }} />
          ) : null}
        </>
      ) : null}
      <ObjectFields schema={timeoutSchema} value={value} path="" ctx={ctx} onChange={(v) => onChange(v)} />
    </div>
  );
}

/** A short description of the body's shape: its top-level fields, required ones marked. */
function bodySchemaHint(s: JsonSchema): string {
  const props = Object.keys(s.properties ?? {});
  if (props.length === 0) return s.description ?? `A JSON ${typesOf(s)[0] ?? 'value'}.`;
  const required = new Set(s.required ?? []);
  return `A JSON object with ${props.map((p) => (required.has(p) ? `${p} (required)` : p)).join(', ')}.`;
}
