// Streaming execute (legacy `stream: true` / `X-Stream-Response: true`, and v2 `stream: true`), as Sim
// streams: server-sent events, each one `data: <JSON>` line. Every selected output is sent as a chunk
// when its block completes (a string as is, other values as pretty-printed JSON); then one terminal
// frame: `{event: "final", data: {success, error?, output, status?}}`, or `{event: "error", error}` for a
// timeout or a cancellation; then `data: "[DONE]"`. A client that disconnects cancels the run.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RunResult, StepRecord } from '../engine/index.js';
import { selectedValues, valueAt, type OutputSelector } from './output-selection.js';

export interface StreamedRun {
  result: RunResult;
  output: unknown;
}

const frame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

/**
 * Answers a request with the event stream of one sync run. `start` runs it, calling `onBlock` as each
 * block completes; its signal aborts when the client goes away. Failures before this call are ordinary
 * JSON errors; a failure after it (the run could not start) is an `error` frame.
 */
export async function streamRun(
  request: FastifyRequest,
  reply: FastifyReply,
  selectors: readonly OutputSelector[],
  start: (onBlock: (step: StepRecord) => void, signal: AbortSignal) => Promise<StreamedRun>,
): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = String(v);
  raw.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.flushHeaders();

  const abort = new AbortController();
  let ended = false;
  const onClose = () => {
    if (!ended) abort.abort(new Error('Client cancelled request'));
  };
  request.raw.socket?.once('close', onClose);
  raw.once('close', onClose);
  const write = (data: unknown) => {
    if (!raw.writableEnded && !raw.destroyed) raw.write(frame(data));
  };

  const outputs = new Map<string, unknown>();
  const streamed = new Set<string>();
  let emitted = false;
  const onBlock = (step: StepRecord) => {
    outputs.set(step.blockId, step.output);
    for (const s of selectors) {
      if (s.blockId !== step.blockId) continue;
      const v = valueAt(step.output, s.path);
      if (!v.found) continue;
      const text = typeof v.value === 'string' ? v.value : JSON.stringify(v.value ?? null, null, 2);
      // Once anything was sent, each further selected output (one chunk each) starts a new paragraph.
      write({ blockId: step.blockId, chunk: emitted ? `\n\n${text}` : text });
      emitted = true;
      streamed.add(s.key);
    }
  };

  try {
    const { result, output } = await start(onBlock, abort.signal);
    if (result.status === 'timed_out' || result.status === 'cancelled') {
      write({ event: 'error', error: result.status === 'cancelled' && abort.signal.aborted ? 'Client cancelled request' : (result.error?.message ?? 'Run stopped') });
    } else {
      const shaped = selectors.length > 0 && result.status !== 'paused' ? selectedValues(selectors, outputs, streamed) : (output ?? null);
      write({
        event: 'final',
        data: {
          success: result.status === 'completed' || result.status === 'paused',
          ...(result.status === 'failed' ? { error: result.error?.message ?? 'Execution failed' } : {}),
          output: shaped,
          ...(result.status === 'paused' ? { status: 'paused' } : {}),
        },
      });
    }
  } catch (err) {
    request.log.warn({ err }, 'streamed run failed');
    write({ event: 'error', error: err instanceof Error ? err.message : 'Execution failed' });
  } finally {
    ended = true;
    request.raw.socket?.off('close', onClose);
    write('[DONE]');
    if (!raw.writableEnded) raw.end();
  }
}
