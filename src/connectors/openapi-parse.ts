// Parses a connector's OpenAPI document on a thread of its own (docs/architecture.md, Connectors): one worker
// per document, ended when it answers, after PARSE_TIMEOUT_MS, or past its heap limit. At most
// MAX_PARALLEL_PARSES run at once; later documents wait their turn.
import { HttpError } from '../http/errors.js';
import { startModuleWorker } from '../worker-module.js';
import type { ParsedDocument } from './openapi.js';
import type { ParseReply } from './openapi-worker.js';

/** Past this a document is refused: the parser took 1.8 s on this machine for the largest accepted shape. */
export const PARSE_TIMEOUT_MS = 20_000;
const MAX_PARALLEL_PARSES = 2;
/** The parser's heap: documents are at most 5 MiB, and their resolved size is bounded (openapi.ts). */
const PARSE_HEAP_MB = 512;

let running = 0;
const waiting: (() => void)[] = [];

async function turn(): Promise<() => void> {
  if (running >= MAX_PARALLEL_PARSES) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  return () => {
    running--;
    waiting.shift()?.();
  };
}

/** `parseDocument` of openapi.ts, run on a worker thread; its errors (400 with details) come back as they were. */
export async function parseDocumentOffThread(input: unknown, timeoutMs = PARSE_TIMEOUT_MS): Promise<ParsedDocument> {
  const done = await turn();
  try {
    const worker = startModuleWorker(import.meta.url, 'openapi-worker', {
      name: 'weft-openapi-parse', resourceLimits: { maxOldGenerationSizeMb: PARSE_HEAP_MB },
    });
    try {
      const reply = await new Promise<ParseReply>((resolve, reject) => {
        const timer = setTimeout(() => reject(new HttpError(400, `Invalid OpenAPI document: it took longer than ${timeoutMs / 1000} s to read`)), timeoutMs);
        worker.once('message', (r: ParseReply) => {
          clearTimeout(timer);
          resolve(r);
        });
        worker.once('error', (err) => {
          clearTimeout(timer);
          reject(new HttpError(400, `Invalid OpenAPI document: it could not be read (${err.message})`));
        });
        worker.once('exit', (code) => {
          clearTimeout(timer);
          reject(new HttpError(400, `Invalid OpenAPI document: reading it stopped (exit code ${code})`));
        });
        worker.postMessage(input);
      });
      if (!reply.ok) throw new HttpError(reply.status, reply.message, reply.extra);
      return reply.parsed;
    } finally {
      void worker.terminate();
    }
  } finally {
    done();
  }
}
