/**
 * Worker thread that parses and chunks one uploaded document at a time, so that untrusted files are read on
 * their own heap (capped by `resourceLimits`, see ingest-pool.ts) and off the server's event loop. A file
 * that exhausts the heap kills only this thread. Started by `IngestWorkerPool`.
 */
import { parentPort } from 'node:worker_threads';
import { chunkDocument, type ChunkingConfig, type DocumentChunk } from './chunker.js';
import type { DocumentKind } from './file-types.js';
import { checkBound, count, type IngestBounds } from './ingest-bounds.js';
import { parseDocument } from './parse.js';
import { DocumentParseError } from './parsed-document.js';
import { countTokens } from '../tokenizer.js';

export interface IngestRequest {
  id: number;
  kind: DocumentKind;
  bytes: Uint8Array;
  chunking: ChunkingConfig;
  bounds: IngestBounds;
}

export type IngestReply =
  /** The worker has the document and begins to read it: its parse time counts from here, not from the worker's start. */
  | { id: number; reading: true }
  | { id: number; ok: true; chunks: DocumentChunk[]; characterCount: number }
  /** `documentError`: the file itself is at fault (message safe to show); otherwise a bug or environment failure. */
  | { id: number; ok: false; documentError: boolean; error: string };

const port = parentPort;
if (!port) throw new Error('ingest-worker must run in a worker thread');

async function handle(req: IngestRequest): Promise<IngestReply> {
  try {
    const parsed = await parseDocument(req.kind, req.bytes, req.bounds);
    const chunks = chunkDocument(parsed, req.chunking);
    checkBound(req.bounds, 'maxChunks', chunks.length, (n) => `it makes ${count(n)}`);
    return { id: req.id, ok: true, chunks, characterCount: parsed.characterCount };
  } catch (err) {
    if (err instanceof DocumentParseError) return { id: req.id, ok: false, documentError: true, error: err.message };
    return { id: req.id, ok: false, documentError: false, error: err instanceof Error ? err.message : String(err) };
  }
}

// The tokenizer's ranks (every document's chunks are counted) load before this worker listens: a document's
// parse time, counted from the 'reading' message, is then its own, not this worker's start (seconds on a busy host).
countTokens('');

// One document at a time: the pool sends the next only after the reply.
port.on('message', (req: IngestRequest) => {
  port.postMessage({ id: req.id, reading: true } satisfies IngestReply);
  void handle(req).then((reply) => port.postMessage(reply));
});
