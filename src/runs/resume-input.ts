import { describedSize } from '../engine/json-size.js';
import { HttpError } from '../http/errors.js';
import type { StoredPoint } from './pause-store.js';

/** A field of a human block's form. */
export interface FormField { name: string; type: string; required?: boolean; default?: unknown }

/** The form a pause point asks to be filled. */
export const formFields = (point: StoredPoint): FormField[] => ((point.response as { fields?: FormField[] } | null)?.fields ?? []);

/**
 * The most a resume's input may measure as JSON. The input becomes the human block's output and is stored
 * several times (the resume queue entry, the pause record's steps, the resumed run and its trace), so it is
 * kept small: a form's answers, not a payload.
 */
export const MAX_RESUME_INPUT_BYTES = 64 * 1024;

/** The cap the routes apply: MAX_RESUME_INPUT_BYTES, or the block output cap when that is lower (the input is the block's output). */
export const resumeInputCap = (maxBlockOutputBytes: number): number => Math.min(MAX_RESUME_INPUT_BYTES, maxBlockOutputBytes);

/**
 * Refuses (400) a resume input over `limit` bytes of JSON. Measured without building its JSON, and only as
 * far as a multiple of the limit: a 10 MiB body costs no more than that to refuse.
 */
export function checkResumeInputSize(input: unknown, limit: number = MAX_RESUME_INPUT_BYTES): void {
  if (input === undefined || input === null) return;
  const size = describedSize(input, limit);
  if (size.bytes <= limit) return;
  const message = `Resume input is too large: ${size.text} of JSON, over the limit of ${limit} bytes`;
  throw new HttpError(400, message, { details: [{ code: 'too_big', path: ['input'], maximum: limit, message }] });
}

/**
 * Checks a resume submission against the pause's form; coerces like the start block. The input is refused
 * over `limit` bytes (checkResumeInputSize). A form that declares fields keeps only those: a member it does not
 * declare is dropped (the reference service accepts any input, so extra members are not an error, but they are
 * not the form's answer and are not stored). A form with no fields (a plain approval) takes any object.
 */
export function validateSubmission(fields: FormField[], input: unknown, limit: number = MAX_RESUME_INPUT_BYTES): Record<string, unknown> {
  if (input !== undefined && input !== null && (typeof input !== 'object' || Array.isArray(input))) {
    throw new HttpError(400, 'Resume input must be an object', { details: [{ code: 'invalid_type', path: ['input'], message: 'Expected an object' }] });
  }
  checkResumeInputSize(input, limit);
  const given = (input ?? {}) as Record<string, unknown>;
  // Own members only (a field named "constructor" is not found on the prototype); entries are defined, not
  // assigned, so a member named "__proto__" stays a plain member.
  const own = (name: string): unknown => (Object.hasOwn(given, name) ? given[name] : undefined);
  const out: Record<string, unknown> = {};
  const put = (name: string, value: unknown) => Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  if (fields.length === 0) {
    for (const [k, v] of Object.entries(given)) put(k, v);
    return out;
  }
  const details: { code: string; path: string[]; message: string }[] = [];
  for (const f of fields) {
    let v = own(f.name);
    if (v === undefined || v === null || v === '') {
      if (f.default !== undefined) put(f.name, f.default);
      else if (f.required) details.push({ code: 'invalid_type', path: ['input', f.name], message: `Field "${f.name}" is required` });
      else if (v !== undefined) put(f.name, v);
      continue;
    }
    const fail = () => details.push({ code: 'invalid_type', path: ['input', f.name], message: `Field "${f.name}" must be ${f.type === 'array' ? 'an array' : `a ${f.type}`}` });
    switch (f.type) {
      case 'number': {
        const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
        if (!Number.isFinite(n)) fail();
        else put(f.name, n);
        break;
      }
      case 'boolean':
        if (v === 'true') v = true;
        if (v === 'false') v = false;
        if (typeof v !== 'boolean') fail();
        else put(f.name, v);
        break;
      case 'object':
      case 'array':
        if (typeof v === 'string') {
          try {
            v = JSON.parse(v);
          } catch {
            // judged below
          }
        }
        if (f.type === 'array' ? !Array.isArray(v) : typeof v !== 'object' || v === null || Array.isArray(v)) fail();
        else put(f.name, v);
        break;
      case 'string':
        if (typeof v !== 'string') fail();
        else put(f.name, v);
        break;
      default:
        put(f.name, v);
        break;
    }
  }
  if (details.length) throw new HttpError(400, details[0].message, { details });
  return out;
}
