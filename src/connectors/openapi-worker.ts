// The thread a connector's OpenAPI document is validated and resolved on (connectors/openapi-parse.ts): the
// parser's cost follows the document, which the tenant writes, so it never runs on the event loop.
import { parentPort } from 'node:worker_threads';
import { HttpError } from '../http/errors.js';
import { parseDocument, type ParsedDocument } from './openapi.js';

export type ParseReply =
  | { ok: true; parsed: ParsedDocument }
  | { ok: false; status: number; message: string; extra: Record<string, unknown> };

parentPort?.once('message', (input: unknown) => {
  parseDocument(input).then(
    (parsed) => parentPort?.postMessage({ ok: true, parsed } satisfies ParseReply),
    (err: unknown) => {
      const reply: ParseReply = err instanceof HttpError
        ? { ok: false, status: err.status, message: err.message, extra: { ...err.extra } }
        : { ok: false, status: 400, message: `Invalid OpenAPI document: ${err instanceof Error ? err.message : String(err)}`, extra: {} };
      parentPort?.postMessage(reply);
    },
  );
});
