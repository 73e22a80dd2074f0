/**
 * A small pool of worker threads that parse and chunk uploaded documents (ingest-worker.ts). Each worker has
 * its own heap limit, so a document that needs more memory than that kills its worker, not the server; the
 * pool bounds how many run at once, so several hostile uploads together stay within `workers x heapMb`.
 * Workers are reused between documents (loading the file-format libraries costs a few hundred milliseconds)
 * and stopped after `idleMs` without work; a worker that crashed, or whose document was aborted, is discarded.
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
}

export interface ParseJob {
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

interface IdleWorker {
  worker: Worker;
  timer: NodeJS.Timeout;
}

export class IngestWorkerPool {
  private readonly idle: IdleWorker[] = [];
  private readonly running = new Set<Worker>();
  private readonly waiting: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  private slotsInUse = 0;
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: IngestPoolOptions) {}

  /** Parses and chunks one document in a worker; rejects with IngestWorkerCrash, DocumentParseError or the abort reason. */
  async run(job: ParseJob, signal: AbortSignal): Promise<ParsedChunks> {
    await this.acquireSlot(signal);
    let worker: Worker | undefined;
    let healthy = false;
    try {
      worker = this.takeWorker();
      const result = await this.exchange(worker, job, signal);
      healthy = true;
      return result;
    } finally {
      if (worker) this.giveBack(worker, healthy);
      this.releaseSlot();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error('the ingest worker pool is closed'));
    const workers = [...this.running, ...this.idle.splice(0).map((i) => (clearTimeout(i.timer), i.worker))];
    this.running.clear();
    await Promise.all(workers.map((w) => w.terminate()));
  }

  private exchange(worker: Worker, job: ParseJob, signal: AbortSignal): Promise<ParsedChunks> {
    return new Promise<ParsedChunks>((resolve, reject) => {
      const id = this.nextId++;
      const done = (): void => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const onMessage = (reply: IngestReply): void => {
        if (reply.id !== id) return;
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

  private acquireSlot(signal: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the ingest worker pool is closed'));
    if (this.slotsInUse < this.options.workers) {
      this.slotsInUse++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const entry = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = (): void => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  /** Hands the slot straight to the next waiter, or frees it. */
  private releaseSlot(): void {
    const next = this.waiting.shift();
    if (next) next.resolve();
    else this.slotsInUse--;
  }
}
