// A run tree: a run and all its descendants (the child runs of its workflow blocks, and theirs) share one
// step budget, one bound on held block outputs, one concurrency of blocks executing at once, and one pacing
// of the event loop. run-state.ts holds each run's own state; node.ts takes slots and steps from here.

/** What the tree reads of the run's ClockPort (declared here: ports.ts names RunTree in the child-workflow port). */
interface TreeClock {
  now(): number;
  yield?(): Promise<void>;
}

/** The scheduler lets the event loop run after this many steps ... */
const YIELD_EVERY_STEPS = 200;
/** ... or after this many milliseconds without yielding, whichever comes first. */
const YIELD_EVERY_MS = 10;

/** Slots handed over first come, first served. */
class Semaphore {
  private free: number;
  private readonly waiters: (() => void)[] = [];

  constructor(size: number) {
    this.free = Math.max(1, size);
  }

  /** Null when a slot was free (no await, no microtask); else resolves once one is handed over. */
  acquire(): Promise<void> | null {
    if (this.free > 0) {
      this.free--;
      return null;
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}

/**
 * What a run and all its descendants (child runs of workflow blocks, and theirs) share: one step budget, one
 * bound on held block outputs, one concurrency of blocks executing at once, and one pacing of the event loop.
 * Each child run used to get all four afresh: 20 children each fanning out to 20 more got 421 budgets and
 * 421 time slices per event-loop turn, and held another workspace's request for 28 s.
 */
export class RunTree {
  readonly maxSteps: number;
  readonly maxRunOutputBytes: number;
  /** Block executions of the whole tree so far (the step budget's count). */
  steps = 0;
  private heldOutputBytes = 0;
  private passed: string | null = null;
  private readonly slots: Semaphore;
  private stepsSinceYield = 0;
  private lastYieldAt: number;
  /** Steps waiting to go on after a yield, released one per event-loop turn (see pause). */
  private readonly paused: (() => void)[] = [];
  private draining = false;

  constructor(private readonly clock: TreeClock, limits: { maxSteps: number; maxRunOutputBytes: number; maxConcurrency: number }) {
    this.maxSteps = limits.maxSteps;
    this.maxRunOutputBytes = limits.maxRunOutputBytes;
    this.slots = new Semaphore(limits.maxConcurrency);
    this.lastYieldAt = clock.now();
  }

  /**
   * The message of the limit the tree has passed (its step budget or its held-output bound), null while it has
   * passed none: every run of the tree then fails at its next block with it.
   */
  get failure(): string | null {
    return this.passed;
  }

  /** Counts one step; the error message once the budget is spent (or the tree failed), null otherwise. */
  takeStep(blockName: string): string | null {
    if (this.passed !== null) return this.passed;
    if (this.steps >= this.maxSteps) {
      this.passed = `Step budget exceeded: the run executed ${this.steps} blocks (limit ${this.maxSteps}); stopped at block "${blockName}"`;
      return this.passed;
    }
    this.steps++;
    this.stepsSinceYield++;
    return null;
  }

  /** Adds a block output's bytes to those the tree holds; the error message past the bound, null otherwise. */
  hold(bytes: number, blockName: string): string | null {
    const held = this.heldOutputBytes + bytes;
    if (held > this.maxRunOutputBytes) {
      this.passed ??= `Run output limit exceeded: the run would hold ${held} bytes of block outputs (limit ${this.maxRunOutputBytes} bytes, maxRunOutputBytes); stopped at block "${blockName}"`;
      return this.passed;
    }
    this.heldOutputBytes = held;
    return null;
  }

  /** A child run ended: the outputs it held are let go (what it returns is held again by its parent's block). */
  letGo(bytes: number): void {
    this.heldOutputBytes = Math.max(0, this.heldOutputBytes - bytes);
  }

  /** A leaf block's concurrency slot (see BlockSlot). */
  slot(): BlockSlot {
    return new BlockSlot(this.slots);
  }

  /** True when the tree has kept the event loop long enough; then the step awaits `pause()`. */
  shouldYield(): boolean {
    if (this.clock.yield === undefined) return false;
    return this.stepsSinceYield >= YIELD_EVERY_STEPS || this.clock.now() - this.lastYieldAt >= YIELD_EVERY_MS;
  }

  /**
   * Resolves after at least one event-loop turn. The steps of the tree that paused are let go one per turn,
   * each with a fresh slice: were they all let go in the same turn, each would run its continuation before
   * other requests get the loop back, as every run of a tree with its own pacing did.
   */
  pause(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.paused.push(resolve);
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      for (let next = this.paused.shift(); next !== undefined; next = this.paused.shift()) {
        await this.clock.yield?.();
        this.stepsSinceYield = 0;
        this.lastYieldAt = this.clock.now();
        next();
      }
    } finally {
      this.draining = false;
    }
  }
}

/**
 * A leaf block's slot of its tree's concurrency. A block that waits on child runs (workflow block, an agent's
 * workflow tools) lends it to the tree while they run and takes it back after: holding it, a chain of nested
 * workflow blocks as deep as the concurrency would wait forever for slots its own ancestors hold. Counted,
 * since an agent may run several children at once; once the block has ended (`close`) nothing is taken back.
 */
export class BlockSlot {
  private held = false;
  private children = 0;
  private closed = false;

  constructor(private readonly slots: Semaphore) {}

  /** Null when the slot was free at once (see Semaphore.acquire). */
  acquire(): Promise<void> | null {
    const wait = this.slots.acquire();
    if (wait === null) {
      this.held = true;
      return null;
    }
    return wait.then(() => this.taken());
  }

  lend(): void {
    this.children++;
    if (!this.held) return;
    this.held = false;
    this.slots.release();
  }

  async takeBack(): Promise<void> {
    this.children--;
    if (this.children > 0 || this.closed || this.held) return;
    const wait = this.slots.acquire();
    if (wait !== null) await wait;
    this.taken();
  }

  close(): void {
    this.closed = true;
    if (!this.held) return;
    this.held = false;
    this.slots.release();
  }

  /** A slot came; given back at once when the block no longer needs it (ended, or waiting on a child again, or already holding one). */
  private taken(): void {
    if (this.closed || this.children > 0 || this.held) this.slots.release();
    else this.held = true;
  }
}
