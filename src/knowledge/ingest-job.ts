import type { Logger } from 'pino';
import { retryWhileUnavailable, type Database, type Queryable } from '../db/database.js';
import { isUuid } from '../ids.js';
import { type StorageGuard, StorageLimitExceeded } from '../limits/storage.js';
import type { JobChannel } from '../queue/shared.js';
import type { EmbedderSet } from './embedder.js';
import type { DocumentKind } from './file-types.js';
import { BOUND_VARIABLES, DocumentBoundError, type IngestBounds } from './ingest-bounds.js';
import { IngestWorkerCrash, type ParsedChunks, type ParseJob } from './ingest-pool.js';
import { DocumentParseError } from './parsed-document.js';
import { chunkContext, documentTitle, textToEmbed } from './ranking.js';
import * as store from './store.js';
import { chunksStoredBytes } from './stored-bytes.js';

/**
 * The durable ingest job of one document (the document row is the job): parse and chunk in a worker with
 * its own heap (never on this thread), embed, then write every chunk and mark the document completed in one
 * transaction that also checks the lease is still ours. A process that dies midway leaves no chunk behind,
 * and the job is taken over from the start; a document whose parser keeps crashing is failed, not replayed.
 */

export interface IngestOptions {
  /** How long an ingest owns its document without renewing; a dead worker's ingest is taken over after it. */
  leaseMs: number;
  /** Interrupted attempts after which an ingest is failed instead of retried. */
  maxInterruptions: number;
  /** Parses that crashed (worker or process died) after which the document is failed instead of parsed again. */
  maxCrashRetries: number;
  /** Wall time of one ingest, from when a parsing worker takes its document to its last chunk written. */
  timeoutMs: number;
  /** Heap of each parsing worker, MB (named in the error of a document that keeps exhausting it). */
  workerHeapMb: number;
  bounds: IngestBounds;
}

/** Where documents are parsed and chunked: the worker pool in production (ingest-pool.ts). */
export interface DocumentParser {
  /** `started` is called when a worker takes the document (the wait for one before is not the document's time). */
  run(job: ParseJob, signal: AbortSignal, started?: () => void): Promise<ParsedChunks>;
}

export interface IngestDeps {
  db: Database;
  log: Logger;
  embedders: EmbedderSet;
  jobs: JobChannel;
  parser: DocumentParser;
  options: IngestOptions;
  /** The workspace's storage limit, which the document's chunks count toward (stored-bytes.ts). */
  storage: StorageGuard;
  /** Bills a hosted embedder's tokens (inside the completing transaction). */
  chargeEmbedding(account: string, tokens: number, key: string, metadata: Record<string, unknown>, q: Queryable): Promise<void>;
}

/**
 * A storage refusal as the document's processing error (the ingest runs off the request: nobody gets the
 * 403); any other error unchanged.
 */
function storageFailure(err: unknown, chunkBytes: number): unknown {
  if (!(err instanceof StorageLimitExceeded)) return err;
  return new DocumentParseError(
    `Storage limit exceeded: indexing the document needs ${chunkBytes} bytes for its chunks (text, full-text index and embeddings) `
    + `and the workspace's plan allows ${err.limitBytes} bytes, of which ${err.freeBytes} are free. No chunk was kept: `
    + 'free space (delete documents or table rows) or move to a larger plan, then delete this document and upload it again',
  );
}

/** Texts per embedding call: large enough to batch well, small enough to renew the lease in between. */
const EMBED_BATCH = 32;

/** Why an ingest was stopped midway: its document is gone, or another process took its ingest over. */
class IngestAbandoned extends Error {
  override name = 'IngestAbandoned';
}

export class IngestJobs {
  private sweeper?: NodeJS.Timeout;
  /** The ingests running in this process, so that deleting a document stops its parse at once. */
  private readonly inFlight = new Map<string, { baseId: string; abandon: AbortController }>();

  constructor(private readonly deps: IngestDeps, private readonly shutdown: AbortSignal) {}

  /** Starts taking ingest jobs, re-dispatches what an earlier process left unfinished, and sweeps expired leases. */
  start(): void {
    const { jobs, log, db, options } = this.deps;
    jobs.work((id) => this.ingest(id));
    // Tried again while the database is away (a second dispatch of an ingest is absorbed by its lease).
    retryWhileUnavailable(() => this.recover(db.mode === 'pglite'), { deadlineMs: options.leaseMs })
      .then((n) => {
        if (n > 0) log.info({ documents: n }, 'resuming unfinished document ingests');
      })
      .catch((err: unknown) => log.error({ err }, 'recovering unfinished document ingests failed'));
    // On both databases: an ingest that stopped renewing its lease without finishing is dispatched again.
    this.sweeper = setInterval(() => {
      this.recover(false).catch((err: unknown) => log.warn({ err }, 'ingest sweep failed'));
    }, Math.min(5_000, options.leaseMs / 2));
    this.sweeper.unref();
  }

  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
  }

  /** Re-enqueues unfinished ingests: all of them at embedded start-up, expired leases otherwise. */
  async recover(all: boolean): Promise<number> {
    if (all) await store.releaseDocumentLeases(this.deps.db);
    const rows = await store.unfinishedDocuments(this.deps.db, all, 10_000);
    for (const row of rows) await this.deps.jobs.enqueue(row.id, row.attempts);
    return rows.length;
  }

  /**
   * Stops the ingests of deleted documents (one, or all of a base's) in this process: a parse in a worker is
   * terminated and its slot freed. In other processes the next lease renewal finds the document gone.
   */
  abandon(deleted: { documentId: string } | { baseId: string }): void {
    for (const [id, ingest] of this.inFlight) {
      if ('documentId' in deleted ? id === deleted.documentId : ingest.baseId === deleted.baseId) {
        ingest.abandon.abort(new IngestAbandoned('the document was deleted'));
      }
    }
  }

  async ingest(documentId: string): Promise<void> {
    if (this.shutdown.aborted || !isUuid(documentId)) return;
    const { db, options, log } = this.deps;
    const doc = await store.leaseDocument(db, documentId, options.leaseMs);
    if (!doc) return; // finished, deleted, or another worker holds it
    const attempt = doc.attempts;
    const abandon = new AbortController();
    this.inFlight.set(doc.id, { baseId: doc.knowledge_base_id, abandon });
    const renew = setInterval(() => {
      store.renewDocumentLease(db, doc.id, attempt, options.leaseMs)
        .then((held) => {
          if (!held) abandon.abort(new IngestAbandoned('the document was deleted or its ingest taken over'));
        })
        .catch((err: unknown) => log.warn({ err, documentId }, 'renewing an ingest lease failed'));
    }, Math.max(250, Math.floor(options.leaseMs / 3)));
    renew.unref();
    // The deadline starts when a worker takes the document: a document queued behind others keeps its time.
    const deadline = new AbortController();
    let deadlineTimer: NodeJS.Timeout | undefined;
    const startDeadline = (): void => {
      deadlineTimer ??= setTimeout(() => deadline.abort(new DocumentBoundError('ingestTimeoutMs', options.timeoutMs)), options.timeoutMs);
      deadlineTimer.unref();
    };
    const signal = AbortSignal.any([this.shutdown, deadline.signal, abandon.signal]);
    try {
      if (attempt - 1 > options.maxInterruptions) {
        throw new DocumentParseError(`Processing was interrupted ${attempt - 1} times by a stopped or crashed process; upload the document again`);
      }
      const embedder = this.deps.embedders.byModel(doc.embedding_model);
      if (!embedder) throw new DocumentParseError(`The embedding model "${doc.embedding_model}" is not configured on this server`);
      const began = performance.now();
      const bytes = await store.readFile(db, doc.id);
      if (!bytes) return; // deleted meanwhile
      const parsed = await this.parseContained(doc, attempt, bytes, signal, startDeadline);
      if (!parsed) return; // the lease was lost
      const { chunks } = parsed;
      if (chunks.length === 0) throw new DocumentParseError('The document contains no text');
      const parsedAt = performance.now();
      // The chunks count toward the workspace's storage: refused before the embedding work when they cannot
      // fit, and checked again with the write (docs/architecture.md, Knowledge ingest).
      const chunkBytes = chunksStoredBytes(chunks, doc.embedding_dimension);
      await this.deps.storage.checkRoom(db, doc.workspace_id, chunkBytes).catch((err: unknown) => {
        throw storageFailure(err, chunkBytes);
      });
      // The document's name leads each embedded text and its indexed words (see ranking.ts).
      const title = documentTitle(doc.filename);
      const vectors: number[][] = [];
      let billedTokens = 0;
      for (let i = 0; i < chunks.length; i += EMBED_BATCH) {
        signal.throwIfAborted();
        const out = await embedder.embed(chunks.slice(i, i + EMBED_BATCH).map((c) => textToEmbed(c, title)), signal);
        vectors.push(...out.vectors);
        billedTokens += out.tokens;
      }
      const embeddedAt = performance.now();
      const completed = await db.tx(async (q) => {
        const ok = await store.completeDocument(
          q, { id: doc.id, baseId: doc.knowledge_base_id, attempt, dimension: doc.embedding_dimension },
          chunks.map((c, i) => ({
            index: c.index, content: c.content, tokenCount: c.tokenCount, metadata: c.metadata, embedding: vectors[i] as number[], context: chunkContext(c, title),
          })),
          { tokens: chunks.reduce((n, c) => n + c.tokenCount, 0), characters: parsed.characterCount },
        );
        // Over the limit, the transaction rolls back: no chunk is kept, and the document fails below.
        if (ok) await this.deps.storage.checkAfterWrite(q, doc.workspace_id, chunkBytes);
        if (ok && doc.billed_account) {
          await this.deps.chargeEmbedding(doc.billed_account, billedTokens, `knowledge-ingest:${doc.id}:${attempt}`, { documentId: doc.id }, q);
        }
        return ok;
      }).catch((err: unknown) => {
        throw storageFailure(err, chunkBytes);
      });
      if (completed) {
        const ms = (a: number, b: number) => Math.round(b - a);
        log.info({
          documentId, chunks: chunks.length, parseMs: ms(began, parsedAt), embedMs: ms(parsedAt, embeddedAt), writeMs: ms(embeddedAt, performance.now()),
        }, 'document ingested');
      }
    } catch (err) {
      if (this.shutdown.aborted) return; // taken over after restart
      if (abandon.signal.aborted) {
        log.info({ documentId, reason: (abandon.signal.reason as Error).message }, 'document ingest stopped');
        return;
      }
      const failure = deadline.signal.aborted ? new DocumentBoundError('ingestTimeoutMs', options.timeoutMs) : err;
      const reason = failure instanceof DocumentParseError
        ? failure.message
        : `Processing failed: ${failure instanceof Error ? failure.message : String(failure)}`;
      if (!(failure instanceof DocumentParseError)) log.error({ err, documentId }, 'document ingest failed');
      await store.failDocument(db, doc.id, attempt, reason).catch((e: unknown) => log.error({ err: e, documentId }, 'recording a failed ingest failed'));
    } finally {
      clearInterval(renew);
      clearTimeout(deadlineTimer);
      if (this.inFlight.get(doc.id)?.abandon === abandon) this.inFlight.delete(doc.id);
    }
  }

  /**
   * Parses in a worker. Each parse is counted on the row and committed before it starts, and taken back
   * when the worker answers; one that never answered (the worker, or this whole process, died) stays
   * counted, and after `maxCrashRetries` of those the document is failed instead of parsed again.
   */
  private async parseContained(
    doc: store.LeasedDocument, attempt: number, bytes: Uint8Array, signal: AbortSignal, workerStarted: () => void,
  ): Promise<ParsedChunks | undefined> {
    const { db, options, log, parser } = this.deps;
    for (;;) {
      const started = await store.beginParseAttempt(db, doc.id, attempt);
      if (started === undefined) return undefined;
      const crashes = started - 1;
      if (crashes > options.maxCrashRetries) {
        throw new DocumentParseError(
          `Processing crashed repeatedly (${crashes} times): the document needs more memory than ${BOUND_VARIABLES.workerHeapMb} `
          + `(${options.workerHeapMb} MB) allows, or breaks its parser`,
        );
      }
      try {
        const result = await parser.run({
          workspaceId: doc.workspace_id,
          kind: doc.file_kind as DocumentKind,
          // Each try gets its own copy: the bytes move to the worker.
          bytes: bytes.slice(),
          chunking: { maxSize: doc.chunk_max_size, minSize: doc.chunk_min_size, overlap: doc.chunk_overlap },
          bounds: options.bounds,
        }, signal, workerStarted);
        await store.endParseAttempt(db, doc.id);
        return result;
      } catch (err) {
        if (err instanceof IngestWorkerCrash) {
          log.warn({ documentId: doc.id, crash: err.message, crashes: crashes + 1 }, 'a document crashed its ingest worker');
          continue;
        }
        // The worker answered (the document is refused) or the ingest was stopped: no crash.
        await store.endParseAttempt(db, doc.id).catch(() => undefined);
        throw err;
      }
    }
  }
}
