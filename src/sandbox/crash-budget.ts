// Which workspaces keep ending the sandbox process, and what their code may do meanwhile
// (docs/architecture.md, "The sandbox process": a workspace's budget of crashes).
//
// A crash is charged to a workspace only when its calls were the only ones running in the process: code of
// another workspace that happened to share the process at that moment is not to blame. When several
// workspaces' calls were running, each becomes a suspect: for a while its calls run in a process of their own,
// one at a time, where a crash has only one possible cause. A workspace charged `strikesToPause` crashes within
// `windowMs` has its code that needs an isolate refused for a pause, doubling with each pause it earns while it
// keeps crashing; pure code is never refused (it runs in the server, on a budget of its own).

export interface CrashBudgetOptions {
  /** Crashes charged to one workspace within this span count together (default 10 minutes). */
  windowMs?: number;
  /** Charged crashes within the window that pause the workspace (default 2). */
  strikesToPause?: number;
  /** The first pause (default 60 s); each further one doubles, up to `maxPauseMs`. */
  firstPauseMs?: number;
  /** The longest pause (default 1 hour). */
  maxPauseMs?: number;
  /** How long a workspace stays a suspect after a crash it may have caused (default 10 minutes). */
  suspectMs?: number;
  /** Workspaces remembered at most: the least recently touched are forgotten first (default 10,000). */
  maxTracked?: number;
}

interface Standing {
  /** When the crashes charged to it within the window happened. */
  strikes: number[];
  /** Pauses earned in a row (reset once a window passes without a charged crash). */
  pauses: number;
  pausedUntil: number;
  suspectUntil: number;
  lastStrikeAt: number;
  /** Crashes charged to it in all (while remembered). */
  crashes: number;
}

/** Why a workspace's call was refused: how long it still waits, and the crashes that earned it. */
export interface Pause { remainingMs: number; crashes: number }

export class CrashBudget {
  private readonly windowMs: number;
  private readonly strikesToPause: number;
  private readonly firstPauseMs: number;
  private readonly maxPauseMs: number;
  private readonly suspectMs: number;
  private readonly maxTracked: number;
  /** By workspace, in the order last touched (a Map keeps insertion order). */
  private readonly standings = new Map<string, Standing>();
  private charged = 0;

  constructor(opts: CrashBudgetOptions = {}) {
    this.windowMs = opts.windowMs ?? 10 * 60_000;
    this.strikesToPause = opts.strikesToPause ?? 2;
    this.firstPauseMs = opts.firstPauseMs ?? 60_000;
    this.maxPauseMs = opts.maxPauseMs ?? 60 * 60_000;
    this.suspectMs = opts.suspectMs ?? 10 * 60_000;
    this.maxTracked = opts.maxTracked ?? 10_000;
  }

  /** The process stopped while the calls of `tenants` (one entry per call) ran in it. */
  recordCrash(tenants: readonly string[], now = Date.now()): void {
    const distinct = [...new Set(tenants)];
    if (distinct.length === 1) this.strike(distinct[0] as string, now);
    else for (const tenant of distinct) this.touch(tenant).suspectUntil = now + this.suspectMs;
  }

  /** Set while `tenant`'s calls are refused. */
  pause(tenant: string, now = Date.now()): Pause | undefined {
    const s = this.standings.get(tenant);
    if (!s || s.pausedUntil <= now) return undefined;
    return { remainingMs: s.pausedUntil - now, crashes: s.crashes };
  }

  /** Whether `tenant`'s calls should run alone, where a crash can only be theirs. */
  suspected(tenant: string, now = Date.now()): boolean {
    const s = this.standings.get(tenant);
    return s !== undefined && s.suspectUntil > now;
  }

  /** Crashes charged to a single workspace so far (metrics, tests). */
  get chargedCrashes(): number {
    return this.charged;
  }

  private strike(tenant: string, now: number): void {
    this.charged++;
    const s = this.touch(tenant);
    s.crashes++;
    if (now - s.lastStrikeAt > this.windowMs) s.pauses = 0;
    s.lastStrikeAt = now;
    s.strikes = s.strikes.filter((at) => now - at <= this.windowMs);
    s.strikes.push(now);
    // Still suspect after its pause: its next calls run alone again.
    s.suspectUntil = now + this.suspectMs;
    if (s.strikes.length < this.strikesToPause) return;
    s.strikes = [];
    s.pauses++;
    s.pausedUntil = now + Math.min(this.maxPauseMs, this.firstPauseMs * 2 ** (s.pauses - 1));
  }

  private touch(tenant: string): Standing {
    let s = this.standings.get(tenant);
    if (s) this.standings.delete(tenant);
    else s = { strikes: [], pauses: 0, pausedUntil: 0, suspectUntil: 0, lastStrikeAt: -Infinity, crashes: 0 };
    this.standings.set(tenant, s);
    if (this.standings.size > this.maxTracked) {
      const oldest = this.standings.keys().next().value;
      if (oldest !== undefined) this.standings.delete(oldest);
    }
    return s;
  }
}
