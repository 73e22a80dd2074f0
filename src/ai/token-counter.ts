// Prompt tokens are counted on a thread of their own (docs/architecture.md, Credit ledgers). The o200k BPE's
// cost is the tenant's to choose: 200 KB of random characters took about half a second on this machine's cores,
// and a 10 MB request holds fifty such texts, so counting on the event loop let one request stall every tenant.
// A count that the thread cannot give within its bounds (a backlog, a slow text, a crashed thread) is answered
// with `undefined`, and the caller uses a bound that needs no tokenizer.
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-module.js';
import type { TokenCountReply } from './token-count-worker.js';

export interface TokenCounter {
  /** The o200k tokens of each text, or undefined when they could not be counted within the counter's bounds. */
  count(texts: readonly string[]): Promise<number[] | undefined>;
  close(): Promise<void>;
}

export interface OffThreadTokenCounterOptions {
  /** A count not answered within this is given up (the thread finishes it, and its answer is dropped). */
  timeoutMs?: number;
  /** Characters sent and not yet counted, past which new counts are refused at once. */
  maxBacklogChars?: number;
  /** The thread (and the tokenizer's 75 MB of ranks) goes after this long without a count. */
  idleMs?: number;
}

interface Pending {
  /** Null once answered with undefined (timed out): the thread's reply is then dropped. */
  resolve: ((counts: number[] | undefined) => void) | null;
  chars: number;
  texts: number;
  timer: NodeJS.Timeout;
}

export class OffThreadTokenCounter implements TokenCounter {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private backlogChars = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly timeoutMs: number;
  private readonly maxBacklogChars: number;
  private readonly idleMs: number;

  constructor(opts: OffThreadTokenCounterOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? 2_000;
    this.maxBacklogChars = opts.maxBacklogChars ?? 8_000_000;
    this.idleMs = opts.idleMs ?? 60_000;
  }

  /** Whether the counting thread is running. */
  get running(): boolean {
    return this.worker !== null;
  }

  count(texts: readonly string[]): Promise<number[] | undefined> {
    if (texts.length === 0) return Promise.resolve([]);
    const chars = texts.reduce((n, t) => n + t.length, 0);
    if (this.closed || this.backlogChars + chars > this.maxBacklogChars) return Promise.resolve(undefined);
    let worker: Worker;
    try {
      worker = this.ensureWorker();
    } catch {
      return Promise.resolve(undefined);
    }
    this.clearIdleTimer();
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.giveUp(id), this.timeoutMs);
      timer.unref();
      this.pending.set(id, { resolve, chars, texts: texts.length, timer });
      this.backlogChars += chars;
      worker.ref();
      worker.postMessage({ id, texts });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.clearIdleTimer();
    const w = this.worker;
    this.worker = null;
    this.failAll();
    if (w) await w.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = startModuleWorker(import.meta.url, 'token-count-worker', {
      name: 'weft-token-count',
      // The ranks take about 75 MB; a text is at most the request body (10 MB).
      resourceLimits: { maxOldGenerationSizeMb: 384 },
    });
    w.on('message', (reply: TokenCountReply) => this.answered(reply));
    w.on('error', () => this.lost(w));
    w.on('exit', () => this.lost(w));
    this.worker = w;
    return w;
  }

  private answered(reply: TokenCountReply): void {
    const p = this.pending.get(reply.id);
    if (!p) return;
    this.pending.delete(reply.id);
    this.backlogChars -= p.chars;
    clearTimeout(p.timer);
    p.resolve?.(reply.counts?.length === p.texts ? reply.counts : undefined);
    if (this.pending.size === 0) this.idle();
  }

  /** Answers the count with undefined; the thread's backlog still holds its text until it replies. */
  private giveUp(id: number): void {
    const p = this.pending.get(id);
    if (!p?.resolve) return;
    p.resolve(undefined);
    p.resolve = null;
  }

  private lost(w: Worker): void {
    if (this.worker !== w) return;
    this.worker = null;
    this.failAll();
  }

  private failAll(): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.resolve?.(undefined);
    }
    this.pending.clear();
    this.backlogChars = 0;
  }

  /** Nothing waits: the thread no longer keeps the process alive, and goes after `idleMs`. */
  private idle(): void {
    const w = this.worker;
    if (!w) return;
    w.unref();
    this.clearIdleTimer();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.worker !== w || this.pending.size > 0) return;
      this.worker = null;
      void w.terminate();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private clearIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }
}
