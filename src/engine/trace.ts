// The run's trace: one entry per block execution, capped (entries past the cap are counted, not
// kept), with each block's resolved config summarised and its secrets masked.
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

  constructor(private readonly maxEntries: number) {}

  add(entry: BlockTrace): void {
    if (this.closed) return;
    if (this.entries.length < this.maxEntries) this.entries.push(entry);
    else this.dropped++;
  }

  /** Ends the trace: later entries (blocks still unwinding) are ignored. */
  close(): { entries: BlockTrace[]; dropped: number } {
    this.closed = true;
    return { entries: this.entries.slice(), dropped: this.dropped };
  }
}

/** Appends log lines up to the per-entry cap. */
export function appendLogs(into: SandboxLogEntry[], from: Iterable<SandboxLogEntry>): void {
  for (const entry of from) {
    if (into.length >= MAX_TRACE_LOGS) return;
    into.push(entry);
  }
}

export function appendLog(into: SandboxLogEntry[], entry: SandboxLogEntry): void {
  if (into.length < MAX_TRACE_LOGS) into.push(entry);
}

/** ISO 8601 form of a clock reading. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : formatInterpolated(err) || 'unknown error';
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
