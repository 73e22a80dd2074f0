// Where a sandbox call's V8 context comes from (docs/architecture.md, "Sandbox contexts"). `fresh`: a new
// context, created ahead as the isolate's spare so creation overlaps other work. `workspace`: a context an
// earlier call of the same workspace used, hardened once (harden.ts), wiped when that call ended and kept
// idle per isolate and workspace; a new hardened one when there is none.
import ivm from 'isolated-vm';
import { HARDEN_SOURCE } from './harden.js';

export type SandboxContexts = 'fresh' | 'workspace';

/** Idle reusable contexts kept per isolate, and per workspace within it. */
const MAX_IDLE_CONTEXTS = 16;
const MAX_IDLE_CONTEXTS_PER_TENANT = 8;
/** A wipe that takes longer (a call left a great many globals) drops the context instead. */
const WIPE_TIMEOUT_MS = 100;

/** What one isolate of the pool keeps for its contexts. */
export interface ContextStore {
  isolate: ivm.Isolate;
  spare: Promise<ivm.Context> | null;
  /** The hardening script and the end-of-call wipe, compiled once per isolate (`workspace` contexts only). */
  harden: Promise<ivm.Script> | null;
  wipe: Promise<ivm.Script> | null;
  /** Idle hardened contexts by tenant, least recently returned first. */
  idle: Map<string, ivm.Context[]>;
  idleCount: number;
}

/** The store of a new isolate (or of one that replaced a disposed isolate: nothing of the old one is kept). */
export function emptyContextStore(isolate: ivm.Isolate): ContextStore {
  return { isolate, spare: null, harden: null, wipe: null, idle: new Map(), idleCount: 0 };
}

/** A context lent to one run (or one call) on one isolate. */
export interface Lease<S extends ContextStore> {
  slot: S;
  isolate: ivm.Isolate;
  tenant: string;
  context: Promise<ivm.Context>;
  /** The context served earlier calls: the next call checks that none of their globals is left, and removes any. */
  wipe: boolean;
  /** Something may have survived the lease's calls (a timeout, an abort, a failure of the sandbox itself). */
  spoiled: boolean;
}

export function release(context: ivm.Context | undefined): void {
  try {
    context?.release();
  } catch {
    // its isolate is gone
  }
}

export class ContextSupply<S extends ContextStore> {
  /** Contexts created, and calls served by a context an earlier call used. */
  readonly stats = { created: 0, reused: 0 };
  /** Ended leases' contexts being wiped before they are kept idle. */
  private readonly parking = new Set<Promise<void>>();

  /** `usable`: the slot still holds this isolate and the pool still lends it. */
  constructor(private readonly reuse: boolean, private readonly usable: (slot: S, isolate: ivm.Isolate) => boolean) {}

  /** A new context; hardened when contexts are reused. */
  async create(slot: S): Promise<ivm.Context> {
    const isolate = slot.isolate;
    const context = await isolate.createContext();
    this.stats.created++;
    if (!this.reuse) return context;
    try {
      slot.harden ??= isolate.compileScript(HARDEN_SOURCE, { filename: 'file:///weft-harden.js' });
      await (await slot.harden).run(context, { timeout: 2000 });
      return context;
    } catch (err) {
      release(context);
      throw err;
    }
  }

  lease(slot: S, tenant: string): Lease<S> {
    const base = { slot, isolate: slot.isolate, tenant, spoiled: false };
    const idle = this.reuse ? slot.idle.get(tenant) : undefined;
    const reused = idle?.pop();
    if (reused !== undefined) {
      slot.idleCount--;
      if (idle?.length === 0) slot.idle.delete(tenant);
      this.stats.reused++;
      return { ...base, context: Promise.resolve(reused), wipe: true };
    }
    const spare = slot.spare;
    slot.spare = null;
    const context = spare ?? this.create(slot);
    context.catch(() => undefined);
    return { ...base, context, wipe: false };
  }

  /** The lease's calls are over: its context goes back to its workspace's idle list, or is released. */
  end(lease: Lease<S>): void {
    const ended = lease.context.then(
      (context) => (!this.reuse || lease.spoiled || !this.usable(lease.slot, lease.isolate) ? release(context) : this.park(lease, context)),
      () => undefined,
    );
    if (!this.reuse) return;
    this.parking.add(ended);
    void ended.finally(() => this.parking.delete(ended));
  }

  /** Creates the isolate's next context in the background, if it has none waiting. */
  refillSpare(slot: S): void {
    if (slot.spare !== null || slot.isolate.isDisposed) return;
    const p = this.create(slot);
    p.catch(() => {
      if (slot.spare === p) slot.spare = null;
    });
    slot.spare = p;
  }

  /** Resolves once the contexts of ended leases are wiped and idle (or released). */
  async parked(): Promise<void> {
    while (this.parking.size > 0) await Promise.all([...this.parking]);
  }

  /** Wipes the globals the lease's calls left, then keeps the context idle for its workspace (or releases it if that failed). */
  private async park(lease: Lease<S>, context: ivm.Context): Promise<void> {
    const { slot, isolate } = lease;
    try {
      slot.wipe ??= isolate.compileScript('__weftRelease()', { filename: 'file:///weft-release.js' });
      // Queued behind the call if it still runs (cancelled mid-way), which marks the lease spoiled.
      const clean = await (await slot.wipe).run(context, { timeout: WIPE_TIMEOUT_MS });
      if (clean !== true || lease.spoiled || !this.usable(slot, isolate)) return release(context);
    } catch {
      return release(context);
    }
    const list = slot.idle.get(lease.tenant) ?? [];
    slot.idle.delete(lease.tenant); // re-inserted last: the map's order is least recently used first
    list.push(context);
    slot.idle.set(lease.tenant, list);
    slot.idleCount++;
    if (list.length > MAX_IDLE_CONTEXTS_PER_TENANT) {
      slot.idleCount--;
      release(list.shift());
    }
    while (slot.idleCount > MAX_IDLE_CONTEXTS) {
      const [oldestTenant, oldest] = slot.idle.entries().next().value as [string, ivm.Context[]];
      slot.idleCount--;
      release(oldest.shift());
      if (oldest.length === 0) slot.idle.delete(oldestTenant);
    }
  }
}
