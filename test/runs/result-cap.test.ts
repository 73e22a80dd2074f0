// capResult: the run's stored and returned result over WEFT_MAX_RUN_RESULT_BYTES fails the run with its real
// size (or "more than" a bound), never a made-up one such as Number.MAX_SAFE_INTEGER.
import { describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/engine/index.js';
import { capResult } from '../../src/runs/run-options.js';

function result(output: unknown): RunResult {
  return {
    status: 'completed', output, steps: 1, variables: {}, startedAt: '', endedAt: '', durationMs: 0,
    trace: [{ key: 'f', blockId: 'f', name: 'f', type: 'function', status: 'success', startedAt: '', durationMs: 0, output }],
  };
}

describe('capResult', () => {
  it('keeps a result within the limit as it is', () => {
    const r = result('x'.repeat(998));
    expect(capResult(r, 1000)).toBe(r);
  });

  it('fails a result over the limit, giving its size, and drops the trace outputs', () => {
    const capped = capResult(result('é'.repeat(1000)), 1000);
    expect(capped.status).toBe('failed');
    expect(capped.output).toBeNull();
    expect(capped.error?.message).toBe("The run's result is 2002 bytes, over the limit of 1000 bytes (WEFT_MAX_RUN_RESULT_BYTES)");
    expect(capped.trace[0].output).toBeUndefined();
  });

  it('a result longer than JSON.stringify can build says "more than", not 9007199254740991', () => {
    // Its JSON (2^27 times "null,") is past V8's longest string: stringify throws on it.
    const started = performance.now();
    const capped = capResult(result(new Array(2 ** 27)), 1000);
    expect(capped.status).toBe('failed');
    expect(capped.error?.message).toBe("The run's result is more than 16000 bytes, over the limit of 1000 bytes (WEFT_MAX_RUN_RESULT_BYTES)");
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('a result that is not JSON says so', () => {
    const capped = capResult(result({ n: 1n }), 1000);
    expect(capped.status).toBe('failed');
    expect(capped.error?.message).toBe("The run's result cannot be stored: it is not JSON (a cycle or a BigInt)");
  });
});
