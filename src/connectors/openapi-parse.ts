// Parses a connector's OpenAPI document on a thread of its own (docs/architecture.md, Connectors): one worker
// per document, ended when it answers, after PARSE_TIMEOUT_MS, or past its heap limit. MAX_PARALLEL_PARSES
// run at once, shared fairly between workspaces (a FairPool: round-robin between the workspaces waiting, and one
// holding every turn lends another workspace a third), and at most MAX_WAITING_PARSES of a workspace wait. With
// one FIFO queue for all, a workspace saving ten large documents held another's save 39 s.
import { HttpError } from '../http/errors.js';
import { FairPool } from '../sandbox/fair-pool.js';
import { startModuleWorker } from '../worker-module.js';
import type { ParsedDocument } from './openapi.js';
import type { ParseReply } from './openapi-worker.js';

/** Past this a document is refused: the parser took 1.8 s on this machine for the largest accepted shape. */
export const PARSE_TIMEOUT_MS = 20_000;
const MAX_PARALLEL_PARSES = 2;
/** Documents of one workspace waiting for a turn; one more is refused (429). */
export const MAX_WAITING_PARSES = 4;
/** The parser's heap: documents are at most 5 MiB, and their resolved size is bounded (openapi.ts). */
const PARSE_HEAP_MB = 512;

// A slot is only a turn to start a worker: nothing to create or dispose.
let slots = 0;
const turns = new FairPool<number>({
  size: MAX_PARALLEL_PARSES,
  createSlot: () => ++slots,
  disposeSlot: () => undefined,
  prepareSlot: () => undefined,
  abortError: () => new Error('aborted'),
});
const waitingOf = new Map<string, number>();

/**
 * Waits for a turn of `workspaceId` to read a document; call the result to give it back. 429
 * PARSE_CONCURRENCY_LIMIT when the workspace already has its most waiting.
 */
export async function parseTurn(workspaceId: string): Promise<() => void> {
  const waiting = waitingOf.get(workspaceId) ?? 0;
  if (waiting >= MAX_WAITING_PARSES) {
    throw new HttpError(429, `Too many OpenAPI documents of this workspace are waiting to be read: ${MAX_PARALLEL_PARSES} are read at a time and ${MAX_WAITING_PARSES} of a workspace may wait`,
      { code: 'PARSE_CONCURRENCY_LIMIT', retryable: true, retryAfterSeconds: 5 }, { 'Retry-After': '5' });
  }
  waitingOf.set(workspaceId, waiting + 1);
  let slot: number;
  try {
    slot = await turns.acquire(workspaceId);
  } finally {
    const left = (waitingOf.get(workspaceId) ?? 1) - 1;
    if (left > 0) waitingOf.set(workspaceId, left);
    else waitingOf.delete(workspaceId);
  }
  return () => turns.release(slot);
}

/** Documents of a workspace waiting for a turn (for tests and metrics). */
export function parseLoad(workspaceId: string): { waiting: number } {
  return { waiting: waitingOf.get(workspaceId) ?? 0 };
}

/**
 * `parseDocument` of openapi.ts, run on a worker thread in `workspaceId`'s turn; its errors (400 with details)
 * come back as they were. 429 PARSE_CONCURRENCY_LIMIT when the workspace already has its most waiting.
 */
export async function parseDocumentOffThread(input: unknown, workspaceId: string, timeoutMs = PARSE_TIMEOUT_MS): Promise<ParsedDocument> {
  const done = await parseTurn(workspaceId);
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
