// The client's SSE reader and its poller, without a server.
import { describe, expect, it } from 'vitest';
import { WeftApiError, WeftTimeoutError, pollUntil, readSse } from '../../clients/ts/src/index.js';

const streamOf = (pieces: string[]) => {
  const enc = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const p of pieces) controller.enqueue(enc.encode(p));
      controller.close();
    },
  });
};

const collect = async (pieces: string[]) => {
  const out = [];
  for await (const e of readSse(streamOf(pieces))) out.push(e);
  return out;
};

describe('readSse', () => {
  it('reads events split anywhere, with LF, CRLF or CR line ends, comments and multi-line data', async () => {
    const events = await collect([': keep-alive\n\nda', 'ta: {"a":1}\r', '\n\r\nevent: note\ndata: one\ndata:two\rid: 7\r\r', 'data: [DONE]\n\n']);
    expect(events).toEqual([
      { event: 'message', data: '{"a":1}' },
      { event: 'note', data: 'one\ntwo', id: '7' },
      { event: 'message', data: '[DONE]', id: '7' },
    ]);
  });

  it('delivers a last event that is not followed by a blank line', async () => {
    expect(await collect(['data: x\n\ndata: tail'])).toEqual([{ event: 'message', data: 'x' }, { event: 'message', data: 'tail' }]);
  });

  it('splits a multi-byte character across chunks correctly', async () => {
    const bytes = new TextEncoder().encode('data: héllo\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(bytes.slice(0, 8));
        c.enqueue(bytes.slice(8));
        c.close();
      },
    });
    const out = [];
    for await (const e of readSse(body)) out.push(e.data);
    expect(out).toEqual(['héllo']);
  });
});

describe('pollUntil', () => {
  it('backs off until done, waits out a 429 Retry-After, and times out', async () => {
    let calls = 0;
    const value = await pollUntil(async () => ++calls, (n) => n === 3, { initialDelayMs: 1 });
    expect(value).toBe(3);

    let refused = false;
    const started = Date.now();
    const after429 = await pollUntil(async () => {
      if (!refused) {
        refused = true;
        throw new WeftApiError({ status: 429, message: 'Rate limit exceeded', retryAfter: 0.05 });
      }
      return 'ok';
    }, () => true, { initialDelayMs: 1 });
    expect(after429).toBe('ok');
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);

    await expect(pollUntil(async () => 0, () => false, { initialDelayMs: 5, timeoutMs: 30 })).rejects.toBeInstanceOf(WeftTimeoutError);
    await expect(pollUntil(async () => {
      throw new WeftApiError({ status: 404, message: 'Not found' });
    }, () => true)).rejects.toMatchObject({ status: 404 });
  });
});

describe('WeftApiError.from', () => {
  const answer = (headers: Record<string, string>) => ({ status: 429, statusText: 'Too Many Requests', headers: new Headers(headers) });

  it('reads the wait from Retry-After, else the body\'s retryAfterSeconds, never an epoch time as seconds', () => {
    const refill = Date.now() + 30_000;
    const body = { error: 'Rate limit exceeded', retryAfter: refill, retryAfterSeconds: 30 };
    expect(WeftApiError.from(answer({ 'retry-after': '29' }), body).retryAfter).toBe(29);
    expect(WeftApiError.from(answer({}), body).retryAfter).toBe(30);
    // A body with only the refill time (epoch ms): the seconds until then.
    const untilRefill = WeftApiError.from(answer({}), { error: 'Rate limit exceeded', retryAfter: refill }).retryAfter!;
    expect(untilRefill).toBeGreaterThan(0);
    expect(untilRefill).toBeLessThanOrEqual(30);
  });
});
