// Reads a multipart/form-data upload from the request stream with busboy, enforcing the file size limit
// while reading (an oversized file is refused without buffering past the limit).
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { HttpError } from '../http/errors.js';

export interface UploadPart {
  filename: string;
  mimeType: string;
  bytes: Buffer;
}

export interface UploadForm {
  fields: Record<string, string>;
  files: UploadPart[];
}

export const MAX_FILES_PER_UPLOAD = 20;

/**
 * Reads the form; a file over `maxFileBytes`, or files over `maxFileBytes` together (one request never
 * holds more than one largest file in memory), is a 413 as soon as the limit is passed.
 */
export function readUploadForm(stream: Readable, headers: Record<string, string | string[] | undefined>, maxFileBytes: number): Promise<UploadForm> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const files: UploadPart[] = [];
    let totalBytes = 0;
    let failed: HttpError | undefined;
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: headers as busboy.BusboyConfig['headers'],
        // Browsers and curl send names as raw UTF-8; busboy would otherwise read them as Latin-1.
        defParamCharset: 'utf8',
        // One byte over the limit tells a file at the limit from one beyond it.
        limits: { fileSize: maxFileBytes + 1, files: MAX_FILES_PER_UPLOAD, fields: 50, fieldSize: 1024 * 1024, parts: MAX_FILES_PER_UPLOAD + 50 },
      });
    } catch {
      reject(new HttpError(400, 'Malformed multipart/form-data body'));
      return;
    }
    const fail = (err: HttpError) => {
      if (failed) return;
      failed = err;
      stream.unpipe(parser);
      stream.resume(); // drain the rest so the client reads the answer
      reject(err);
    };
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (field, file, info) => {
      if (field !== 'file' && field !== 'files' && field !== 'file[]') {
        file.resume();
        return;
      }
      const parts: Buffer[] = [];
      file.on('data', (c: Buffer) => {
        totalBytes += c.length;
        if (totalBytes > maxFileBytes && !failed) {
          fail(new HttpError(413, `The files of one upload exceed ${(maxFileBytes / (1024 * 1024)).toFixed(0)}MB together: send them in several requests`));
          return;
        }
        parts.push(c);
      });
      file.on('limit', () => {
        fail(new HttpError(413, `File size exceeds ${(maxFileBytes / (1024 * 1024)).toFixed(0)}MB limit ("${info.filename ?? field}")`));
      });
      file.on('end', () => {
        if (!failed) files.push({ filename: info.filename || 'upload', mimeType: info.mimeType || '', bytes: Buffer.concat(parts) });
      });
    });
    parser.on('filesLimit', () => fail(new HttpError(413, `At most ${MAX_FILES_PER_UPLOAD} files per upload`)));
    parser.on('fieldsLimit', () => fail(new HttpError(400, 'Too many form fields')));
    parser.on('error', () => fail(new HttpError(400, 'Malformed multipart/form-data body')));
    parser.on('close', () => {
      if (!failed) resolve({ fields, files });
    });
    stream.on('error', () => fail(new HttpError(400, 'The upload was interrupted')));
    stream.pipe(parser);
  });
}
