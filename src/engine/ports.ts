// Default adapters the engine can supply itself (pure: timers only).
import type { ClockPort } from './types.js';

export type { ChildWorkflowPort, ClockPort, EnginePorts, HttpPort, HttpRequest, HttpResponse, SandboxPort, SandboxRequest, SandboxResult } from './types.js';

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('Aborted');
}

/** Real timers; `sleep` rejects as soon as the signal aborts. */
export const realClock: ClockPort = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortReason(signal));
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      signal.addEventListener('abort', onAbort, { once: true });
    }),
};
