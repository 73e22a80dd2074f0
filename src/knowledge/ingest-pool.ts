/**
 * A small pool of worker threads that parse and chunk uploaded documents (ingest-worker.ts). Each worker has
 * its own heap limit, so a document that needs more memory than that kills its worker, not the server; the
 * pool bounds how many run at once, so several hostile uploads together stay within `workers x heapMb`.
 * Workers are reused between documents (loading the file-format libraries costs a few hundred milliseconds)
 * and stopped after `idleMs` without work; a worker that crashed, or whose document was aborted or ran past
 * `parseTimeoutMs`, is terminated (which stops its parse wherever it is).
 *
 * The slots are shared between workspaces: a freed slot goes to the waiting workspace holding the fewest, then
 * to the one served least recently (FIFO within a workspace). So a workspace that queued many documents delays
 * another's by at most one document's parse (bounded by `parseTimeoutMs`), never by all of its own.
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-module.js';
import type { ChunkingConfig, DocumentChunk } from './chunker.js';
import type { DocumentKind } from './file-types.js';
import type { IngestBounds } from './ingest-bounds.js';
import type { IngestReply, IngestRequest } from './ingest-worker.js';
import { DocumentParseError } from './parsed-document.js';

export interface IngestPoolOptions {
  /** Documents parsed at once. */
  workers: number;
  /** Old-generation heap of each worker, in MB. */
  heapMb: number;
  /** Stop a worker after this long without work. Default 30 s. */
  idleMs?: number;
  /** Time one document may parse and chunk in its worker, from when the worker gets it. Default 60 s. */
  parseTimeoutMs?: number;
}

export const DEFAULT_PARSE_TIMEOUT_MS = 60_000;

export interface ParseJob {
  /** Whose document it is: the pool's slots are shared fairly between workspaces. */
  workspaceId: string;
  kind: DocumentKind;
  bytes: Uint8Array;
  chunking: ChunkingConfig;
  bounds: IngestBounds;
}

export interface ParsedChunks {
  chunks: DocumentChunk[];
  characterCount: number;
}

/** The worker died before answering (out of memory, or any other exit). */
export class IngestWorkerCrash extends Error {
  override name = 'IngestWorkerCrash';
  constructor(message: string, readonly outOfMemory: boolean) {
    super(message);
  }
}

/** The document parsed past `parseTimeoutMs`; its worker was terminated. */
export class ParseTimeLimitError extends DocumentParseError {
  override name = 'ParseTimeLimitError';
  constructor(limitMs: number) {
    super(`Reading the document took longer than ${formatSeconds(limitMs)}, the limit for one document (WEFT_KNOWLEDGE_PARSE_TIMEOUT_MS); it was stopped`);
  }
}

const formatSeconds = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`);

interface IdleWorker {
  worker: Worker;
  timer: NodeJS.Timeout;
}

interface SlotWaiter {
  workspaceId: string;
  grant: () => void;
  reject: (err: unknown) => void;
}

export class IngestWorkerPool {
  private readonly idle: IdleWorker[] = [];
  private readonly running = new Set<Worker>();
  /** Waiting documents per workspace, FIFO. */
  private readonly waiting = new Map<string, SlotWaiter[]>();
  /** Slots held per workspace. */
  private readonly held = new Map<string, number>();
  /** When each workspace last got a slot (a counter, not a clock); absent: never or not lately. */
  private readonly lastServed = new Map<string, number>();
  private serveCounter = 0;
  private slotsInUse = 0;
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: IngestPoolOptions) {}

  /**
   * Parses and chunks one document in a worker; rejects with IngestWorkerCrash, DocumentParseError (its
   * ParseTimeLimitError included) or the abort reason. `started` is called when a worker takes the document.
   */
  async run(job: ParseJob, signal: AbortSignal, started?: () => void): Promise<ParsedChunks> {
    await this.acquireSlot(job.workspaceId, signal);
    let worker: Worker | undefined;
    let healthy = false;
    try {
      worker = this.takeWorker();
      started?.();
      const result = await this.exchange(worker, job, signal);
      healthy = true;
      return result;
    } finally {
      if (worker) this.giveBack(worker, healthy);
      this.releaseSlot(job.workspaceId);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.waiting.values()) for (const w of queue) w.reject(new Error('the ingest worker pool is closed'));
    this.waiting.clear();
    const workers = [...this.running, ...this.idle.splice(0).map((i) => (clearTimeout(i.timer), i.worker))];
    this.running.clear();
    await Promise.all(workers.map((w) => w.terminate()));
  }

  private exchange(worker: Worker, job: ParseJob, signal: AbortSignal): Promise<ParsedChunks> {
    return new Promise<ParsedChunks>((resolve, reject) => {
      const id = this.nextId++;
      const limitMs = this.options.parseTimeoutMs ?? DEFAULT_PARSE_TIMEOUT_MS;
      // Counted from when the worker begins to read the document: neither waiting for a worker nor a new
      // worker's start (seconds on a busy host) is the document's time. The ingest deadline bounds the rest.
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const onMessage = (reply: IngestReply): void => {
        if (reply.id !== id) return;
        if ('reading' in reply) {
          timer = setTimeout(() => {
            done();
            reject(new ParseTimeLimitError(limitMs));
          }, limitMs);
          return;
        }
        done();
        if (reply.ok) resolve({ chunks: reply.chunks, characterCount: reply.characterCount });
        else reject(reply.documentError ? new DocumentParseError(reply.error) : new Error(reply.error));
      };
      const onError = (err: Error & { code?: string }): void => {
        done();
        const outOfMemory = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
        reject(new IngestWorkerCrash(outOfMemory ? 'the ingest worker ran out of memory' : `the ingest worker crashed: ${err.message}`, outOfMemory));
      };
      const onExit = (code: number): void => {
        done();
        reject(new IngestWorkerCrash(`the ingest worker exited with code ${code}`, false));
      };
      const onAbort = (): void => {
        done();
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      // The bytes move to the worker without a copy when they own their whole buffer.
      const bytes = job.bytes.byteOffset === 0 && job.bytes.byteLength === job.bytes.buffer.byteLength ? job.bytes : job.bytes.slice();
      const request: IngestRequest = { id, kind: job.kind, bytes, chunking: job.chunking, bounds: job.bounds };
      worker.postMessage(request, [bytes.buffer as ArrayBuffer]);
    });
  }

  private takeWorker(): Worker {
    const reused = this.idle.pop();
    if (reused) clearTimeout(reused.timer);
    const worker = reused?.worker ?? this.startWorker();
    worker.ref();
    this.running.add(worker);
    return worker;
  }

  private startWorker(): Worker {
    const worker = startModuleWorker(import.meta.url, 'ingest-worker', {
      name: 'weft-ingest',
      resourceLimits: { maxOldGenerationSizeMb: this.options.heapMb, maxYoungGenerationSizeMb: Math.min(32, this.options.heapMb / 4) },
    });
    // A worker that dies while idle is dropped; its error must not go unhandled (that would end the process).
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      const i = this.idle.findIndex((w) => w.worker === worker);
      if (i >= 0) clearTimeout(this.idle.splice(i, 1)[0]!.timer);
    });
    return worker;
  }

  /** A worker that answered goes back to the idle list; one that crashed or was aborted mid-document is stopped. */
  private giveBack(worker: Worker, healthy: boolean): void {
    this.running.delete(worker);
    if (!healthy || this.closed) {
      void worker.terminate();
      return;
    }
    worker.unref(); // an idle worker must not keep the process alive
    const timer = setTimeout(() => {
      const i = this.idle.findIndex((w) => w.worker === worker);
      if (i >= 0) this.idle.splice(i, 1);
      void worker.terminate();
    }, this.options.idleMs ?? 30_000);
    timer.unref();
    this.idle.push({ worker, timer });
  }

  private acquireSlot(workspaceId: string, signal: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the ingest worker pool is closed'));
    signal.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const queue = this.waiting.get(workspaceId);
        const i = queue ? queue.indexOf(waiter) : -1;
        if (!queue || i < 0) return;
        queue.splice(i, 1);
        if (queue.length === 0) this.waiting.delete(workspaceId);
        reject(signal.reason);
        this.schedule(); // one workspace fewer waiting may let another's document start
      };
      const waiter: SlotWaiter = {
        workspaceId,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const queue = this.waiting.get(workspaceId);
      if (queue) queue.push(waiter);
      else this.waiting.set(workspaceId, [waiter]);
      this.schedule();
    });
  }

  private releaseSlot(workspaceId: string): void {
    this.slotsInUse--;
    const held = (this.held.get(workspaceId) ?? 1) - 1;
    if (held > 0) this.held.set(workspaceId, held);
    else this.held.delete(workspaceId);
    if (!this.closed) this.schedule();
  }

  /** Hands free slots to waiting documents: the fewest held first, then the workspace served least recently. */
  private schedule(): void {
    while (this.slotsInUse < this.options.workers) {
      let next: string | undefined;
      for (const workspaceId of this.waiting.keys()) if (next === undefined || this.before(workspaceId, next)) next = workspaceId;
      if (next === undefined) return;
      const queue = this.waiting.get(next) as SlotWaiter[];
      const waiter = queue.shift() as SlotWaiter;
      if (queue.length === 0) this.waiting.delete(next);
      this.slotsInUse++;
      this.held.set(next, (this.held.get(next) ?? 0) + 1);
      this.lastServed.set(next, ++this.serveCounter);
      waiter.grant();
    }
    // Only the waiting workspaces' turns matter: forget the others, so the map stays small.
    if (this.waiting.size === 0 && this.held.size === 0) this.lastServed.clear();
  }

  private before(a: string, b: string): boolean {
    const heldA = this.held.get(a) ?? 0;
    const heldB = this.held.get(b) ?? 0;
    if (heldA !== heldB) return heldA < heldB;
    return (this.lastServed.get(a) ?? 0) < (this.lastServed.get(b) ?? 0);
  }
}
