// One connector operation + parameters + body -> the HTTP request to send (docs/architecture.md,
// Connectors). Values are checked against the operation's JSON Schemas before anything is sent, within a
// budget per request (schema-check.ts); an error names the parameter (or the body field) that is wrong.
// Auth comes from a workspace secret, whose value the caller resolves through the run (so the run masks it
// in everything it reports).
import type { ConnectorOperation } from './openapi.js';
import { CheckBudget, checkAgainst } from './schema-check.js';

export type AuthType = 'bearer' | 'header' | 'query' | 'basic';
export interface ConnectorAuth {
  type: AuthType;
  /** Name of the workspace secret holding the credential. */
  secret: string;
  /** Header (type header) or query parameter (type query) name. */
  name?: string;
}

export interface BuiltRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

export class ConnectorRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectorRequestError';
  }
}

/** A parameter value as text on the wire (query, header or path). */
function wireText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * Query and header values usually arrive as text from references ("5" for an integer parameter): a
 * text that parses as the schema's scalar type is taken as that value before validation.
 */
function coerce(value: unknown, schema: Record<string, unknown>): unknown {
  if (typeof value !== 'string') return value;
  const type = schema.type;
  const types = Array.isArray(type) ? type : [type];
  if (types.includes('string')) return value;
  if ((types.includes('integer') || types.includes('number')) && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * Builds the request of `operation` against `baseUrl`. Throws ConnectorRequestError naming the first
 * parameter (or body field) that is missing or does not match its schema.
 */
export function buildRequest(
  baseUrl: string,
  operation: ConnectorOperation,
  parameters: unknown,
  body: unknown,
): BuiltRequest {
  if (parameters !== undefined && parameters !== null && !isObject(parameters)) {
    throw new ConnectorRequestError(`parameters of ${operation.operationId} must be an object of parameter values by name`);
  }
  const given = (parameters ?? {}) as Record<string, unknown>;
  const known = new Set(operation.params.map((p) => p.name));
  for (const name of Object.keys(given)) {
    if (!known.has(name)) {
      const list = [...known].join(', ') || 'none';
      throw new ConnectorRequestError(`unknown parameter "${name}" for ${operation.operationId} (its parameters: ${list})`);
    }
  }
  // One budget for all of this request's checks: past it the rest is sent unchecked (the remote API checks).
  const budget = new CheckBudget();
  let path = operation.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const p of operation.params) {
    const raw = given[p.name];
    if (raw === undefined || raw === null || raw === '') {
      if (p.required) throw new ConnectorRequestError(`parameter "${p.name}" (${p.in}) is required by ${operation.operationId}`);
      continue;
    }
    const value = coerce(raw, p.schema);
    const checked = checkAgainst(p.schema, value, budget);
    if (!checked.valid) {
      const at = checked.error.instancePath ? ` at ${checked.error.instancePath}` : '';
      throw new ConnectorRequestError(`parameter "${p.name}" (${p.in})${at} ${checked.error.message}`);
    }
    if (p.in === 'path') path = path.split(`{${p.name}}`).join(encodeURIComponent(wireText(value)));
    else if (p.in === 'query') {
      if (Array.isArray(value)) for (const item of value) query.append(p.name, wireText(item));
      else query.append(p.name, wireText(value));
    } else {
      const text = wireText(value);
      if (/[\r\n]/.test(text)) throw new ConnectorRequestError(`parameter "${p.name}" (header) must not contain line breaks`);
      headers[p.name] = text;
    }
  }
  let sent: string | undefined;
  if (body !== undefined && body !== null && body !== '') {
    if (operation.requestBody === null) throw new ConnectorRequestError(`${operation.operationId} takes no request body`);
    const checked = checkAgainst(operation.requestBody, body, budget);
    if (!checked.valid) {
      const at = checked.error.instancePath;
      throw new ConnectorRequestError(`body${at ? ` field ${at}` : ''} ${checked.error.message}`);
    }
    sent = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  } else if (operation.bodyRequired) {
    throw new ConnectorRequestError(`a request body is required by ${operation.operationId}`);
  }
  let url: URL;
  try {
    url = new URL(baseUrl.replace(/\/+$/, '') + path);
  } catch {
    throw new ConnectorRequestError(`the connector's base URL "${baseUrl}" does not make a valid URL with ${path}`);
  }
  for (const [k, v] of query) url.searchParams.append(k, v);
  headers.accept ??= 'application/json';
  return { url: url.toString(), method: operation.method, headers, ...(sent !== undefined ? { body: sent } : {}) };
}

/** Adds the credential to the request as the connector's auth describes. */
export function applyAuth(request: BuiltRequest, auth: ConnectorAuth, value: string): BuiltRequest {
  if (/[\r\n]/.test(value) && auth.type !== 'query') throw new ConnectorRequestError(`secret ${auth.secret} contains a line break and cannot be sent in a header`);
  const headers = { ...request.headers };
  switch (auth.type) {
    case 'bearer':
      headers.authorization = `Bearer ${value}`;
      return { ...request, headers };
    case 'basic':
      // The secret holds "user:password".
      headers.authorization = `Basic ${Buffer.from(value, 'utf8').toString('base64')}`;
      return { ...request, headers };
    case 'header':
      headers[auth.name ?? 'x-api-key'] = value;
      return { ...request, headers };
    case 'query': {
      const url = new URL(request.url);
      url.searchParams.set(auth.name ?? 'api_key', value);
      return { ...request, url: url.toString() };
    }
  }
}
