// The run's trace: one entry per block execution, capped (entries past the cap are counted, not
// kept), with each block's resolved config summarised and its secrets masked. What the trace keeps of
// block outputs and console lines is bounded per run (docs/architecture.md, Run traces): the trace is
// held in memory until the run ends and then stored with it, so without a bound one run's console lines
// (1,000 lines of 10,000 characters per call, times every iteration of a loop) grew the server by gigabytes.
import type { SandboxLogEntry } from './ports.js';
import { formatInterpolated } from './references.js';
import type { SecretMask } from './secret-mask.js';
import type { BlockTrace } from './types.js';

/** Resolved config shown in a trace entry is cut to about this many characters of JSON. */
const TRACE_INPUT_LIMIT = 2048;
/** Log lines kept per trace entry. */
const MAX_TRACE_LOGS = 1000;

export class TraceLog {
  private readonly entries: BlockTrace[] = [];
  private dropped = 0;
  private closed = false;
  /** Characters of console lines the trace still keeps, all entries together. */
  private logRoom: number;
  /** JSON bytes of block outputs the trace still keeps, all entries together. */
  private outputRoom: number;

  constructor(private readonly maxEntries: number, budget: { logChars: number; outputBytes: number }) {
    this.logRoom = budget.logChars;
    this.outputRoom = budget.outputBytes;
  }

  /**
   * Appends console lines to one entry's list while the entry (1,000 lines) and the run's budget have room;
   * returns how many were not kept.
   */
  keepLogs(into: SandboxLogEntry[], from: Iterable<SandboxLogEntry>): number {
    let dropped = 0;
    for (const entry of from) {
      const chars = entry.message.length;
      if (into.length >= MAX_TRACE_LOGS || chars > this.logRoom) dropped++;
      else {
        this.logRoom -= chars;
        into.push(entry);
      }
    }
    return dropped;
  }

  /** Whether an output of `bytes` (its JSON) still fits the run's budget; it takes that room when it does. */
  private keepOutput(bytes: number): boolean {
    if (bytes > this.outputRoom) return false;
    this.outputRoom -= bytes;
    return true;
  }

  /** Keeps an entry while there is room for entries; its output (of `outputBytes`) while the run's budget lasts. */
  add(entry: BlockTrace, outputBytes?: number): void {
    if (this.closed) return;
    if (this.entries.length >= this.maxEntries) {
      this.dropped++;
      return;
    }
    if (outputBytes !== undefined && 'output' in entry && !this.keepOutput(outputBytes)) {
      const { output: _notKept, ...rest } = entry;
      this.entries.push({ ...rest, outputOmittedBytes: outputBytes });
    } else this.entries.push(entry);
  }

  /** Ends the trace: later entries (blocks still unwinding) are ignored. */
  close(): { entries: BlockTrace[]; dropped: number } {
    this.closed = true;
    return { entries: this.entries.slice(), dropped: this.dropped };
  }
}

/** ISO 8601 form of a clock reading. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Longest error message a run keeps. A block's message is repeated in the answer, the run's log, its trace entry
 * and each page of the log list: kept whole, code throwing 20 MB made every one of those 20 MB.
 */
export const MAX_ERROR_CHARS = 8_000;

/** A thrown value's message, cut past MAX_ERROR_CHARS (saying how much was left out). */
export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? String(err.message) : typeof err === 'string' ? err : formatInterpolated(err) || 'unknown error';
  if (message.length <= MAX_ERROR_CHARS) return message;
  // Not between the two halves of a surrogate pair: a lone half is invalid Unicode, which the databases refuse.
  const end = /[\ud800-\udbff]/.test(message[MAX_ERROR_CHARS - 1]) ? MAX_ERROR_CHARS - 1 : MAX_ERROR_CHARS;
  return `${message.slice(0, end)}… (${message.length - end} more characters)`;
}

/** Sandbox errors carry the console output of the failed call. */
export function errorLogs(err: unknown): SandboxLogEntry[] | undefined {
  if (err !== null && typeof err === 'object' && 'logs' in err && Array.isArray(err.logs)) {
    return err.logs as SandboxLogEntry[];
  }
  return undefined;
}

/** The resolved config for a trace entry: secret values masked (before it is cut), cut to about 2 KB. */
export function summarizeInput(config: Record<string, unknown>, mask: SecretMask): unknown {
  let json: string | undefined;
  try {
    json = JSON.stringify(config);
  } catch {
    return '[unserializable]';
  }
  if (json === undefined) return undefined;
  if (json.length > TRACE_INPUT_LIMIT) {
    const masked = mask.text(json);
    return masked.length > TRACE_INPUT_LIMIT ? `${masked.slice(0, TRACE_INPUT_LIMIT)}…` : masked;
  }
  return mask.value(config);
}
