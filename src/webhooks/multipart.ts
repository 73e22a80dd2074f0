// multipart/form-data over a body already read into memory (at most 10 MiB; signatures are checked over
// those raw bytes first), parsed by busboy: fields and files.
import busboy from 'busboy';

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
    const fields: Record<string, unknown> = {};
    const files: FilePart[] = [];
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: raw.length } });
    } catch (err) {
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    parser.on('field', (field, value) => {
      const prev = fields[field];
      fields[field] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    });
    parser.on('file', (field, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => files.push({ field, name: info.filename ?? field, contentType: info.mimeType || 'application/octet-stream', data: Buffer.concat(chunks) }));
    });
    parser.on('error', (err) => reject(err instanceof Error ? err : new Error(String(err))));
    parser.on('close', () => resolve({ fields, files }));
    parser.end(raw);
  });
}
