// A pool of `size` slots shared fairly between tenants; a slot is whatever the caller runs one call
// on at a time (an isolate for the sandbox), opaque here: the pool only creates, hands out, takes
// back and disposes it. Why the rules:
// - A call waits for a slot before it starts, so its timeout can start when its code starts
//   (waiting is bounded by the caller's abort signal, not by the timeout).
// - While other tenants wait, a tenant holds no more than its share of the pool (half, at least 1),
//   and waiters are served round-robin across tenants (FIFO within one), so one tenant's endless
//   calls never stall another's.
// - A tenant under its share that finds every slot held by tenants over theirs (taken while nobody
//   else was waiting) gets a temporary extra slot, disposed when given back.

export interface FairPoolOptions<S> {
  /** Slots in the pool (more exist only while lent to tenants under their share). */
  size: number;
  /** Makes a new slot. */
  createSlot: () => S;
  /** Frees a slot's resources; may be called again for a slot already disposed. */
  disposeSlot: (slot: S) => void;
  /** Readies a slot as it is handed out (e.g. replaces a resource that died since its last use). */
  prepareSlot: (slot: S) => void;
  /** The error a waiting call is rejected with when its signal aborts. */
  abortError: (signal: AbortSignal) => Error;
}

interface SlotState {
  /** Tenant of the call holding the slot, or null when free. */
  holder: string | null;
  lastUsed: number;
}

interface Waiter<S> {
  tenant: string;
  /** A slot to take when it is free (e.g. the one holding the caller's state). */
  prefer?: S;
  resolve: (slot: S) => void;
  reject: (err: Error) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class FairPool<S> {
  readonly size: number;
  /** Most slots one tenant holds while another tenant waits. */
  private readonly share: number;
  /** The pool's slots in creation order; a slot given back for good (retired) is removed. */
  private readonly slots = new Map<S, SlotState>();
  /** Waiting calls per tenant, FIFO; the map's order is the round-robin order. */
  private readonly queues = new Map<string, Waiter<S>[]>();
  /** Slots held per tenant. */
  private readonly held = new Map<string, number>();
  private busy = 0;
  private useCounter = 0;
  private closed = false;

  constructor(private readonly opts: FairPoolOptions<S>) {
    this.size = opts.size;
    this.share = Math.max(1, Math.floor(opts.size / 2));
  }

  get disposed(): boolean {
    return this.closed;
  }

  /** Whether the slot was removed from the pool (a temporary extra slot that was given back). */
  isRetired(slot: S): boolean {
    return !this.slots.has(slot);
  }

  /**
   * Waits for a slot for `tenant` (taking `prefer` if it is free when the call's turn comes);
   * resolves at once when one may be taken now. Give it back with `release`.
   */
  acquire(tenant: string, signal?: AbortSignal, prefer?: S): Promise<S> {
    let granted: S | undefined;
    const waiter: Waiter<S> = {
      tenant,
      prefer,
      resolve: (slot) => {
        granted = slot;
      },
      reject: () => undefined,
      signal,
    };
    this.enqueue(waiter);
    this.schedule();
    if (granted !== undefined) return Promise.resolve(granted);
    return new Promise<S>((resolve, reject) => {
      waiter.resolve = (slot) => {
        if (signal && waiter.onAbort) signal.removeEventListener('abort', waiter.onAbort);
        resolve(slot);
      };
      waiter.reject = reject;
      if (signal) {
        waiter.onAbort = () => {
          if (this.dequeue(waiter)) {
            reject(this.opts.abortError(signal));
            this.schedule(); // one tenant fewer waiting may let another start
          }
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
    });
  }

  /** Gives a slot back; a temporary extra one (or any, once disposed) leaves the pool and is disposed. */
  release(slot: S): void {
    const state = this.slots.get(slot);
    const tenant = state?.holder ?? null;
    if (state === undefined || tenant === null) return;
    state.holder = null;
    this.busy--;
    const h = (this.held.get(tenant) ?? 1) - 1;
    if (h > 0) this.held.set(tenant, h);
    else this.held.delete(tenant);
    if (this.slots.size > this.size || this.closed) {
      // Give back a temporary extra slot (any free one will do).
      this.slots.delete(slot);
      this.opts.disposeSlot(slot);
    }
    if (!this.closed) this.schedule();
  }

  /** Rejects every waiting call with `reason` and disposes all slots (held ones leave on release). */
  dispose(reason: Error): void {
    this.closed = true;
    for (const q of this.queues.values()) for (const w of q) w.reject(reason);
    this.queues.clear();
    for (const slot of this.slots.keys()) this.opts.disposeSlot(slot);
  }

  /** Slots held beyond their share by all tenants together: what may be lent out. */
  private excess(): number {
    let n = 0;
    for (const h of this.held.values()) if (h > this.share) n += h - this.share;
    return n;
  }

  private othersWaiting(tenant: string): boolean {
    for (const t of this.queues.keys()) if (t !== tenant) return true;
    return false;
  }

  private canStart(tenant: string): boolean {
    const held = this.held.get(tenant) ?? 0;
    if (held >= this.share && this.othersWaiting(tenant)) return false;
    if (this.busy < this.size) return true;
    // Every slot is taken, some by tenants over their share: a tenant under its share gets a
    // temporary extra one rather than waiting for their (possibly endless) calls.
    return held < this.share && this.busy < this.size + this.excess();
  }

  private enqueue(w: Waiter<S>): void {
    const q = this.queues.get(w.tenant);
    if (q) q.push(w);
    else this.queues.set(w.tenant, [w]);
  }

  private dequeue(w: Waiter<S>): boolean {
    const q = this.queues.get(w.tenant);
    const i = q ? q.indexOf(w) : -1;
    if (!q || i === -1) return false;
    q.splice(i, 1);
    if (q.length === 0) this.queues.delete(w.tenant);
    return true;
  }

  /** Starts waiting calls while they may: round-robin across tenants, FIFO within one. */
  private schedule(): void {
    for (;;) {
      let started = false;
      for (const [tenant, q] of this.queues) {
        if (!this.canStart(tenant)) continue;
        const w = q.shift() as Waiter<S>;
        this.queues.delete(tenant);
        if (q.length > 0) this.queues.set(tenant, q); // to the back of the round
        w.resolve(this.grant(tenant, w.prefer));
        started = true;
        break;
      }
      if (!started) return;
    }
  }

  private grant(tenant: string, prefer?: S): S {
    let slot: S | undefined;
    let state: SlotState | undefined;
    const preferred = prefer === undefined ? undefined : this.slots.get(prefer);
    if (prefer !== undefined && preferred !== undefined && preferred.holder === null) {
      slot = prefer;
      state = preferred;
    } else {
      // The most recently used free slot (warm caches); a new one when none is free.
      for (const [s, st] of this.slots) {
        if (st.holder === null && (state === undefined || st.lastUsed > state.lastUsed)) {
          slot = s;
          state = st;
        }
      }
    }
    if (slot === undefined || state === undefined) {
      slot = this.opts.createSlot();
      state = { holder: null, lastUsed: 0 };
      this.slots.set(slot, state);
    }
    state.holder = tenant;
    state.lastUsed = ++this.useCounter;
    this.busy++;
    this.held.set(tenant, (this.held.get(tenant) ?? 0) + 1);
    this.opts.prepareSlot(slot);
    return slot;
  }
}
