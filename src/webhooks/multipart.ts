// multipart/form-data over a body already read into memory (at most 10 MiB): fields and files.

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

const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

function param(header: string, key: string): string | undefined {
  const m = new RegExp(`(?:^|;)\\s*${key}\\*?=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, 'i').exec(header);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2].trim();
}

/** Parses a multipart body; throws on a malformed one (the route answers 400). */
export function parseMultipart(raw: Buffer, contentType: string): Multipart {
  const boundaryValue = param(contentType.slice(contentType.indexOf(';') + 1), 'boundary');
  if (!boundaryValue) throw new Error('multipart body without a boundary');
  const boundary = Buffer.from(`--${boundaryValue}`);
  const delimiter = Buffer.concat([CRLF, boundary]);
  const fields: Record<string, unknown> = {};
  const files: FilePart[] = [];
  let pos = raw.indexOf(boundary);
  if (pos < 0) throw new Error('multipart boundary not found');
  for (;;) {
    pos += boundary.length;
    if (raw[pos] === 0x2d && raw[pos + 1] === 0x2d) break; // the closing delimiter
    if (raw[pos] !== 0x0d || raw[pos + 1] !== 0x0a) throw new Error('malformed multipart delimiter');
    pos += 2;
    const headerEnd = raw.indexOf(HEADER_END, pos);
    if (headerEnd < 0) throw new Error('malformed multipart part headers');
    const headers = new Map<string, string>();
    for (const line of raw.subarray(pos, headerEnd).toString('utf8').split('\r\n')) {
      const at = line.indexOf(':');
      if (at > 0) headers.set(line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim());
    }
    const next = raw.indexOf(delimiter, headerEnd + 4);
    if (next < 0) throw new Error('unterminated multipart part');
    const data = raw.subarray(headerEnd + 4, next);
    const disposition = headers.get('content-disposition') ?? '';
    const field = param(disposition, 'name');
    if (field === undefined) throw new Error('multipart part without a name');
    const filename = param(disposition, 'filename');
    if (filename !== undefined) {
      files.push({ field, name: filename, contentType: headers.get('content-type') ?? 'application/octet-stream', data: Buffer.from(data) });
    } else {
      const value = data.toString('utf8');
      const prev = fields[field];
      fields[field] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    }
    pos = next + 2;
  }
  return { fields, files };
}
