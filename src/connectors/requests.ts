// One connector operation + parameters + body -> the HTTP request to send (docs/architecture.md,
// Connectors). Values are checked against the operation's JSON Schemas with ajv before anything is sent;
// an error names the parameter (or the body field) that is wrong. Auth comes from a workspace secret,
// whose value the caller resolves through the run (so the run masks it in everything it reports).
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import { RE2JS } from 're2js';
import type { ConnectorOperation } from './openapi.js';

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

/**
 * `pattern` and `patternProperties` of a tenant's schema, matched in linear time (RE2): JavaScript's own engine
 * backtracks, and `^(a+)+$` against 31 letters held the event loop, every tenant's requests, for 7 s. A pattern
 * RE2 cannot express (lookaround, backreferences) is not enforced here; the remote API still checks its input.
 */
const linearRegExp: RegExpEngine = Object.assign((pattern: string, flags: string) => new LinearPattern(pattern, flags), { code: 'linearRegExp' });

class LinearPattern {
  private readonly re: RE2JS | null;

  constructor(private readonly source: string, private readonly flags: string) {
    try {
      this.re = RE2JS.compile(source, flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0);
    } catch {
      this.re = null;
    }
  }

  test(text: string): boolean {
    return this.re === null || this.re.test(text);
  }

  /** Ajv keeps one compiled pattern per distinct text of this. */
  toString(): string {
    return `/${this.source}/${this.flags}`;
  }
}

// OpenAPI schemas carry keywords ajv does not know (nullable, example, xml, discriminator ...): not strict.
const ajv = new Ajv({ strict: false, allErrors: false, coerceTypes: false, validateFormats: false, code: { regExp: linearRegExp } });
/** Compiled validators by schema text; schemas are immutable once a connector is saved. */
const compiled = new Map<string, ValidateFunction | null>();
const MAX_COMPILED = 2000;
/**
 * A schema larger than this is not enforced here: ajv compiles on the main thread, and a schema of 50,000
 * properties took 1.6 s there before its generated code overflowed the stack. The remote API checks its input.
 */
export const MAX_ENFORCED_SCHEMA_CHARS = 64 * 1024;

function validatorFor(schema: Record<string, unknown>): ValidateFunction | null {
  const key = JSON.stringify(schema);
  if (key.length > MAX_ENFORCED_SCHEMA_CHARS) return null;
  let fn = compiled.get(key);
  if (fn === undefined) {
    try {
      fn = ajv.compile(schema);
    } catch {
      // A schema ajv cannot compile (e.g. a circular reference left in place) is not enforced here;
      // the remote API still checks what it receives.
      fn = null;
    }
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(key, fn);
  }
  return fn;
}

function describe(error: ErrorObject | undefined): string {
  if (!error) return 'is invalid';
  if (error.keyword === 'enum') return `must be one of ${JSON.stringify((error.params as { allowedValues: unknown[] }).allowedValues)}`;
  return error.message ?? 'is invalid';
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
    const check = validatorFor(p.schema);
    if (check && !check(value)) {
      const err = check.errors?.[0];
      const at = err?.instancePath ? ` at ${err.instancePath}` : '';
      throw new ConnectorRequestError(`parameter "${p.name}" (${p.in})${at} ${describe(err)}`);
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
    const check = validatorFor(operation.requestBody);
    if (check && !check(body)) {
      const err = check.errors?.[0];
      throw new ConnectorRequestError(`body${err?.instancePath ? ` field ${err.instancePath}` : ''} ${describe(err)}`);
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
