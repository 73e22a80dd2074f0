import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route checks every string of its body itself and names the field when one cannot be stored (table
     * rows: the column): the parser leaves NUL and unpaired surrogates to it.
     */
    checksStorableText?: boolean;
  }
}

export const MAX_JSON_DEPTH = 64;
/**
 * Members and elements in one JSON body (commas and opening brackets outside strings). Parsing is one
 * synchronous call: 950,000 keys in an 8 MB webhook body held the event loop 1.4 s, and a body of this many
 * about 50 ms. A batch of 1,000 table rows of 50 columns is 51,000.
 */
export const MAX_JSON_MEMBERS = 100_000;

/** What a scan of a JSON text found, without parsing it. */
export interface JsonShape {
  /** Deepest nesting of objects and arrays. */
  depth: number;
  /** Members and elements (see MAX_JSON_MEMBERS). */
  members: number;
  /**
   * A string escapes a character the databases cannot store in JSON (NUL, `\u0000`) or a surrogate that is
   * not half of a pair: PostgreSQL refuses such text in jsonb, so a write of it would fail as a 500.
   */
  unstorable: boolean;
}

const hexValue = (text: string, at: number): number => {
  const hex = text.slice(at, at + 4);
  return /^[0-9a-fA-F]{4}$/.test(hex) ? parseInt(hex, 16) : -1;
};

/** Scans a JSON text once (no parsing): nesting depth, members, and escapes that cannot be stored. */
export function scanJson(text: string): JsonShape {
  let depth = 0;
  let max = 0;
  let members = 0;
  let unstorable = false;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 34) inString = false;
      else if (c === 92) {
        // A \u escape: NUL, or a surrogate whose other half does not follow (or precede) it.
        if (text.charCodeAt(i + 1) === 117 && !unstorable) {
          const v = hexValue(text, i + 2);
          if (v === 0 || (v >= 0xdc00 && v <= 0xdfff)) unstorable = true;
          else if (v >= 0xd800 && v <= 0xdbff) {
            const low = text.charCodeAt(i + 6) === 92 && text.charCodeAt(i + 7) === 117 ? hexValue(text, i + 8) : -1;
            if (low >= 0xdc00 && low <= 0xdfff) i += 6; // the pair's second half is consumed with it
            else unstorable = true;
          }
        }
        i++; // skip the escaped character
      }
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      members++;
      if (++depth > max) max = depth;
    } else if (c === 125 || c === 93) depth--;
    else if (c === 44) members++;
  }
  return { depth: max, members, unstorable };
}

/**
 * Why a JSON body is refused before it is parsed (400, or 413 for too many members), or undefined; with
 * `textChecked`, strings that cannot be stored are left to the route.
 */
export function jsonShapeProblem(text: string, textChecked = false): { status: 400 | 413; message: string } | undefined {
  const shape = scanJson(text);
  if (shape.depth > MAX_JSON_DEPTH) return { status: 400, message: `Request body is nested more than ${MAX_JSON_DEPTH} levels deep` };
  if (shape.members > MAX_JSON_MEMBERS) return { status: 413, message: `Request body holds more than ${MAX_JSON_MEMBERS} members and elements` };
  if (shape.unstorable && !textChecked) {
    return { status: 400, message: 'Request body holds a string with a NUL character (\\u0000) or an unpaired surrogate, which cannot be stored' };
  }
  return undefined;
}

const dropProtoKeys = (key: string, value: unknown): unknown => (key === '__proto__' ? undefined : value);

/**
 * Whether a JSON text can hold a `__proto__` key: spelled out, or written with a \u escape. Only those are
 * parsed with the reviver that drops it, which makes JSON.parse about 4 to 5 times slower (1.5 against 5.5 us
 * for a chat request, 148 against 794 us for 10 KB of rows, measured on this project's machine).
 */
export function mayHoldProtoKey(text: string): boolean {
  return text.includes('__proto__') || text.includes('\\u');
}

type JsonParserDone = (err: Error | null, body?: unknown) => void;

/** Parses a JSON request body as `registerJsonParser` describes. */
function parseJsonBody(request: FastifyRequest, body: string | Buffer, done: JsonParserDone): void {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.trim() === '') return done(null, undefined);
  const problem = jsonShapeProblem(text, request.routeOptions.config?.checksStorableText === true);
  if (problem) return done(new HttpError(problem.status, problem.message), undefined);
  try {
    done(null, mayHoldProtoKey(text) ? JSON.parse(text, dropProtoKeys) : JSON.parse(text));
  } catch {
    const family = request.routeOptions.config?.errorFamily;
    done(new HttpError(400, family === 'execute' ? 'Invalid JSON in request body' : 'Request body must be valid JSON'), undefined);
  }
}

/**
 * JSON bodies: an empty body is no body (routes whose schema needs one answer 400), nesting deeper than
 * MAX_JSON_DEPTH, more than MAX_JSON_MEMBERS members and strings that cannot be stored are refused before
 * parsing, and `__proto__` keys are dropped.
 */
export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJsonBody);
}

/**
 * For the routes that start and resume runs, within the plugin `app` only: the body is JSON whatever its
 * Content-Type says (or without one), and a missing or empty body is `{}`. The reference service reads these
 * bodies so, and `curl -d` (form-encoded by default) or a bare `curl -X POST` are how many callers run a
 * workflow; the same bounds apply as to any JSON body.
 */
export function acceptJsonWithAnyContentType(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, parseJsonBody);
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined || request.body === null) request.body = {};
  });
}
