// OpenAPI 3.0 / 3.1 documents -> connector operations (docs/architecture.md, Connectors). The document is
// validated and its `$ref`s resolved by @readme/openapi-parser; only references inside the document are
// followed (`#/...`): a `$ref` to a file or another host is refused before the parser sees it, so saving a
// connector never makes the service read a file or call a host the caller chose.
import type { ConnectorOperationInfo } from '../engine/index.js';
import { HttpError } from '../http/errors.js';

// The parser and its validators load on the first document (about 0.15 s and several MB of heap):
// an instance whose workspaces import no OpenAPI connector never carries them (docs/architecture.md,
// "Start-up").
let openApiParser: Promise<typeof import('@readme/openapi-parser')> | undefined;

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
/** Operations per connector: bounds what one document costs to store and to offer to a model. */
export const MAX_OPERATIONS = 500;
/**
 * The document with its `$ref`s resolved, as JSON characters, checked before the parser sees it. Resolving shares
 * each referenced schema, but the parser's walks (and serializing the operations) visit it at every use: a 3 KB
 * document of eight schemas, each referring eight times to the next, stood for 8^7 objects, and saving it held
 * the event loop 17 s and 2.3 GB. The parser took 0.5 s for 0.8 MB resolved, 1.8 s for 6 MB, 14.5 s for 50 MB.
 */
export const MAX_RESOLVED_CHARS = 8_000_000;

export type ParameterLocation = 'path' | 'query' | 'header';

export interface OperationParameter {
  name: string;
  in: ParameterLocation;
  required: boolean;
  description?: string;
  /** JSON Schema of the value. */
  schema: Record<string, unknown>;
}

/** An operation as the engine sees it (the port's shape), plus its parameters one by one for building requests. */
export interface ConnectorOperation extends ConnectorOperationInfo {
  bodyRequired: boolean;
  /** Parameters one by one, with where each goes. */
  params: OperationParameter[];
}

export interface ParsedDocument {
  /** Title of the document (info.title). */
  title: string;
  /** First server URL, absolute, or null when the document names none usable. */
  serverUrl: string | null;
  operations: ConnectorOperation[];
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

function invalid(message: string, details: { path?: string; message: string }[] = []): HttpError {
  return new HttpError(400, `Invalid OpenAPI document: ${message}`, { details: details.length ? details : [{ message }] });
}

/** Every `$ref` that points outside the document, with where it is (JSON Pointer). */
function externalRefs(value: unknown, at = '#', found: { path: string; ref: string }[] = []): { path: string; ref: string }[] {
  if (found.length >= 10) return found;
  if (Array.isArray(value)) value.forEach((v, i) => externalRefs(v, `${at}/${i}`, found));
  else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      const here = `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (k === '$ref' && typeof v === 'string' && !v.startsWith('#')) found.push({ path: here, ref: v });
      else externalRefs(v, here, found);
    }
  }
  return found;
}

/** The parser's message without its code frame, keeping the line it points at and its hint. */
function shortMessage(raw: string): string {
  const lines = raw.split('\n');
  const head = lines[0].trim();
  const marked = lines.find((l) => /^>\s*\d+\s*\|/.test(l));
  const hint = lines.map((l) => /\^+\s+(.*)$/.exec(l)?.[1]).find((h) => h);
  const where = marked ? marked.replace(/^>\s*\d+\s*\|\s*/, '').trim() : '';
  const extra = lines.slice(1).filter((l) => l.trim() && !/\|/.test(l)).map((l) => l.trim()).join(' ');
  return [head, extra, where ? `at ${where}` : '', hint ? `(${hint})` : ''].filter(Boolean).join(' ');
}

/** Stable id for an operation without an operationId: method and path, e.g. get_pets_petId. */
export function derivedOperationId(method: string, path: string): string {
  const tail = path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '');
  return `${method.toLowerCase()}_${tail || 'root'}`.slice(0, 64);
}

function jsonMediaSchema(content: unknown): Json | null | undefined {
  if (!isObject(content)) return undefined;
  const key = Object.keys(content).find((k) => /^application\/([\w.+-]*\+)?json\b/i.test(k) || k === '*/*');
  if (key === undefined) return undefined;
  const media = content[key];
  return isObject(media) && isObject(media.schema) ? media.schema : {};
}

function operationParams(pathItem: Json, op: Json): OperationParameter[] {
  const byKey = new Map<string, OperationParameter>();
  for (const list of [pathItem.parameters, op.parameters]) {
    if (!Array.isArray(list)) continue;
    for (const p of list) {
      if (!isObject(p) || typeof p.name !== 'string') continue;
      if (p.in !== 'path' && p.in !== 'query' && p.in !== 'header') continue; // cookies are not sent
      const schema = isObject(p.schema) ? p.schema : jsonMediaSchema(p.content) ?? {};
      byKey.set(`${p.in}:${p.name}`, {
        name: p.name, in: p.in, required: p.in === 'path' || p.required === true, schema,
        ...(typeof p.description === 'string' ? { description: p.description } : {}),
      });
    }
  }
  return [...byKey.values()];
}

/** The schema over all parameters of an operation: one property per parameter name. */
function parametersSchema(params: OperationParameter[]): Json {
  const properties: Json = {};
  const required: string[] = [];
  for (const p of params) {
    properties[p.name] = { ...p.schema, ...(p.description && p.schema.description === undefined ? { description: p.description } : {}) };
    if (p.required) required.push(p.name);
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

function serverUrl(doc: Json): string | null {
  const servers = Array.isArray(doc.servers) ? doc.servers : [];
  for (const s of servers) {
    if (!isObject(s) || typeof s.url !== 'string') continue;
    let url = s.url;
    // Server variables take their defaults.
    if (isObject(s.variables)) {
      for (const [name, v] of Object.entries(s.variables)) {
        if (isObject(v) && typeof v.default === 'string') url = url.split(`{${name}}`).join(v.default);
      }
    }
    try {
      const u = new URL(url);
      if (u.protocol === 'http:' || u.protocol === 'https:') return u.toString().replace(/\/$/, '');
    } catch {
      // relative or templated: the caller must give baseUrl
    }
  }
  return null;
}

/**
 * Validates an OpenAPI 3.0 or 3.1 document and lists its operations. A 400 names what is wrong and
 * where (the parser's messages, or the JSON Pointer of an external `$ref`).
 */
export async function parseDocument(input: unknown): Promise<ParsedDocument> {
  if (!isObject(input)) throw invalid('the document must be a JSON object');
  if (typeof input.openapi !== 'string' || !/^3\.[01]\.\d+/.test(input.openapi)) {
    throw invalid('only OpenAPI 3.0 and 3.1 documents are accepted (the "openapi" field must be "3.0.x" or "3.1.x")', [{ path: '#/openapi', message: 'must be "3.0.x" or "3.1.x"' }]);
  }
  const external = externalRefs(input);
  if (external.length > 0) {
    throw invalid(`external $ref ${JSON.stringify(external[0].ref)} at ${external[0].path} is refused: only references inside the document (#/...) are followed`,
      external.map((e) => ({ path: e.path, message: `external $ref ${JSON.stringify(e.ref)} is refused` })));
  }
  if (!resolvedSizeWithin(input, MAX_RESOLVED_CHARS)) {
    throw invalid(`with its $refs resolved it exceeds ${MAX_RESOLVED_CHARS / 1_000_000} MB as JSON (schemas that refer to others many times over)`);
  }
  const options = { resolve: { external: false, file: false }, dereference: { circular: 'ignore' as const }, validate: { errors: { colorize: false } } };
  const { dereference, validate } = await (openApiParser ??= import('@readme/openapi-parser'));
  let result;
  try {
    result = await validate(structuredClone(input) as never, options);
  } catch (err) {
    throw invalid(err instanceof Error ? shortMessage(err.message) : 'could not be read');
  }
  if (!result.valid) {
    const messages = result.errors.map((e) => shortMessage(e.message));
    throw invalid(messages[0] ?? 'invalid', messages.map((m) => ({ message: m })));
  }
  let doc: Json;
  try {
    doc = (await dereference(structuredClone(input) as never, options)) as unknown as Json;
  } catch (err) {
    throw invalid(err instanceof Error ? shortMessage(err.message) : 'could not resolve its references');
  }
  const operations: ConnectorOperation[] = [];
  const seen = new Set<string>();
  for (const [path, item] of Object.entries(isObject(doc.paths) ? doc.paths : {})) {
    if (!isObject(item)) continue;
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      let operationId = typeof op.operationId === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(op.operationId) ? op.operationId : derivedOperationId(method, path);
      // Tool names allow letters, digits, _ and -; keep ids usable as both.
      operationId = operationId.replace(/\./g, '_');
      for (let n = 2; seen.has(operationId); n++) operationId = `${operationId.replace(/_\d+$/, '')}_${n}`;
      seen.add(operationId);
      const params = operationParams(item, op);
      const body = isObject(op.requestBody) ? jsonMediaSchema(op.requestBody.content) : undefined;
      operations.push({
        operationId, method: method.toUpperCase(), path,
        summary: typeof op.summary === 'string' ? op.summary : '',
        ...(typeof op.description === 'string' ? { description: op.description.slice(0, 4000) } : {}),
        parameters: parametersSchema(params),
        requestBody: body ?? null,
        bodyRequired: body !== undefined && isObject(op.requestBody) && op.requestBody.required === true,
        params,
      });
      if (operations.length > MAX_OPERATIONS) throw invalid(`more than ${MAX_OPERATIONS} operations`);
    }
  }
  const info = isObject(doc.info) ? doc.info : {};
  return { title: typeof info.title === 'string' ? info.title : '', serverUrl: serverUrl(doc), operations };
}

/** The value at a JSON Pointer inside the document (`#/a/b~1c`), or undefined. */
function pointer(doc: unknown, ref: string): unknown {
  if (ref === '#') return doc;
  if (!ref.startsWith('#/')) return undefined;
  let v: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(v)) v = v[Number(key)];
    else if (isObject(v) && Object.hasOwn(v, key)) v = v[key];
    else return undefined;
  }
  return v;
}

/** The references being expanded around a value, innermost first: one met again inside itself is circular. */
interface RefChain { ref: string; outer: RefChain | null }
const inChain = (chain: RefChain | null, ref: string): boolean => {
  for (let c = chain; c; c = c.outer) if (c.ref === ref) return true;
  return false;
};

/**
 * Whether `doc`, with its internal `$ref`s resolved as the parser resolves them (a reference met again inside
 * its own expansion stays a reference), serializes to at most about `limit` characters, counting a shared
 * schema at every place it is used. The walk stops as soon as the count passes the limit, so it costs about
 * `limit` steps at most, whatever the document stands for.
 */
export function resolvedSizeWithin(doc: unknown, limit: number): boolean {
  let size = 0;
  const stack: { v: unknown; chain: RefChain | null }[] = [{ v: doc, chain: null }];
  while (stack.length > 0) {
    const { v, chain } = stack.pop()!;
    if (typeof v === 'string') size += v.length + 2;
    else if (Array.isArray(v)) {
      size += 2 + v.length;
      if (size > limit) return false;
      for (const item of v) stack.push({ v: item, chain });
    } else if (isObject(v)) {
      const ref = v.$ref;
      if (typeof ref === 'string' && ref.startsWith('#')) {
        const target = inChain(chain, ref) ? undefined : pointer(doc, ref);
        // Circular or dangling (the parser reports a dangling one): it stays a reference.
        if (target === undefined) size += ref.length + 12;
        else stack.push({ v: target, chain: { ref, outer: chain } });
      } else {
        const entries = Object.entries(v);
        size += 2;
        for (const [k] of entries) size += k.length + 4;
        if (size > limit) return false;
        for (const [, item] of entries) stack.push({ v: item, chain });
      }
    } else size += 8;
    if (size > limit) return false;
  }
  return true;
}
