import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

export const MAX_JSON_DEPTH = 64;

/** Deepest nesting of objects and arrays in a JSON text, scanning once without parsing. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) max = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
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

/**
 * JSON bodies: an empty body is no body (routes whose schema needs one answer 400), nesting deeper
 * than MAX_JSON_DEPTH is refused before parsing, and `__proto__` keys are dropped.
 */
export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    if (jsonDepth(text) > MAX_JSON_DEPTH) {
      return done(new HttpError(400, `Request body is nested more than ${MAX_JSON_DEPTH} levels deep`), undefined);
    }
    try {
      done(null, mayHoldProtoKey(text) ? JSON.parse(text, dropProtoKeys) : JSON.parse(text));
    } catch {
      const family = request.routeOptions.config?.errorFamily;
      done(new HttpError(400, family === 'execute' ? 'Invalid JSON in request body' : 'Request body must be valid JSON'), undefined);
    }
  });
}
