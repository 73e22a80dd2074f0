// The one check every document name passes, whether it came in a JSON body, a multipart part or a rename.
import { HttpError } from '../http/errors.js';

export const MAX_FILENAME_CHARACTERS = 255;

// C0 controls (NUL included), DEL and the C1 controls: never part of a name, and NUL cannot be stored at all.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The name as stored: any directory part a client sent is dropped (the last path segment is the file's
 * name), surrounding spaces trimmed. Control characters, an empty name and more than 255 characters
 * (Unicode code points) are a 400.
 */
export function cleanFilename(raw: string): string {
  if (CONTROL.test(raw)) throw new HttpError(400, 'filename must not contain control characters');
  const name = (raw.split(/[/\\]/).pop() ?? '').trim();
  if (name === '' || name === '.' || name === '..') throw new HttpError(400, 'filename must not be empty');
  const length = [...name].length;
  if (length > MAX_FILENAME_CHARACTERS) {
    throw new HttpError(400, `filename must be at most ${MAX_FILENAME_CHARACTERS} characters (it has ${length})`);
  }
  return name;
}
