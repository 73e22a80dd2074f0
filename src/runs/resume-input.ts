import { HttpError } from '../http/errors.js';

/** A field of a human block's form. */
export interface FormField { name: string; type: string; required?: boolean; default?: unknown }

/** Checks a resume submission against the pause's form; coerces like the start block. */
export function validateSubmission(fields: FormField[], input: unknown): Record<string, unknown> {
  if (input !== undefined && input !== null && (typeof input !== 'object' || Array.isArray(input))) {
    throw new HttpError(400, 'Resume input must be an object', { details: [{ path: ['input'], message: 'Expected an object' }] });
  }
  const given = (input ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = { ...given };
  const details: { path: string[]; message: string }[] = [];
  for (const f of fields) {
    let v = given[f.name];
    if (v === undefined || v === null || v === '') {
      if (f.default !== undefined) out[f.name] = f.default;
      else if (f.required) details.push({ path: ['input', f.name], message: `Field "${f.name}" is required` });
      continue;
    }
    const fail = () => details.push({ path: ['input', f.name], message: `Field "${f.name}" must be ${f.type === 'array' ? 'an array' : `a ${f.type}`}` });
    switch (f.type) {
      case 'number': {
        const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
        if (!Number.isFinite(n)) fail();
        else out[f.name] = n;
        break;
      }
      case 'boolean':
        if (v === 'true') v = true;
        if (v === 'false') v = false;
        if (typeof v !== 'boolean') fail();
        else out[f.name] = v;
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
        else out[f.name] = v;
        break;
      case 'string':
        if (typeof v !== 'string') fail();
        break;
      default:
        break;
    }
  }
  if (details.length) throw new HttpError(400, details[0].message, { details });
  return out;
}
