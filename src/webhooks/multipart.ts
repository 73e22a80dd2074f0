// multipart/form-data over a body already read into memory (at most 10 MiB; signatures are checked over
// those raw bytes first), parsed by busboy: fields and files.
import busboy from 'busboy';
import { FormFields, MAX_FORM_FIELDS, TooManyFields } from './form-fields.js';

export interface FilePart {
  field: string;
  name: string;
  contentType: string;
  data: Buffer;
}

export interface Multipart {
  fields: Record<string, unknown>;
  files: FilePart[];
}

/** Parses a multipart body; rejects on a malformed one (the route answers 400). */
export function parseMultipart(raw: Buffer, contentType: string): Promise<Multipart> {
  return new Promise((resolve, reject) => {
    const fields = new FormFields();
    const files: FilePart[] = [];
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: raw.length, parts: MAX_FORM_FIELDS + 1 } });
    } catch (err) {
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    let failed = false;
    const fail = (err: Error) => {
      if (!failed) reject(err);
      failed = true;
    };
    // busboy reports the part that reaches its limit and skips the rest: past MAX_FORM_FIELDS parts the body is refused, not cut short.
    parser.on('partsLimit', () => fail(new TooManyFields()));
    parser.on('field', (field, value) => {
      if (failed) return;
      try {
        fields.add(field, value);
      } catch (err) {
        fail(err as Error);
      }
    });
    parser.on('file', (field, stream, info) => {
      // Dropped like a `__proto__` field: files reach the input under their field name.
      if (field === '__proto__') {
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => files.push({ field, name: info.filename ?? field, contentType: info.mimeType || 'application/octet-stream', data: Buffer.concat(chunks) }));
    });
    parser.on('error', (err) => fail(err instanceof Error ? err : new Error(String(err))));
    parser.on('close', () => {
      if (!failed) resolve({ fields: fields.fields, files });
    });
    parser.end(raw);
  });
}
