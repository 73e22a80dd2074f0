// The upstream SSE reader: WHATWG line rules across chunk boundaries, and the bounds on a line and an event.
import { describe, expect, it } from 'vitest';
import { readSse, SseLimitError, type SseEvent } from '../../src/ai/sse.js';

async function* chunks(pieces: (string | Uint8Array)[]): AsyncGenerator<Uint8Array> {
  for (const p of pieces) yield typeof p === 'string' ? new TextEncoder().encode(p) : p;
}

async function events(pieces: (string | Uint8Array)[], limits?: { maxLineChars?: number; maxEventChars?: number }): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readSse(chunks(pieces), limits)) out.push(e);
  return out;
}

describe('readSse', () => {
  it('reads LF, CRLF and CR line ends, a CRLF split between chunks counting once', async () => {
    expect(await events(['data: a\r', '\n\r', '\ndata: b\r\rdata: c\n', '\n', 'event: x\ndata: d\ndata: e\n\n'])).toEqual([
      { event: 'message', data: 'a' }, { event: 'message', data: 'b' }, { event: 'message', data: 'c' }, { event: 'x', data: 'd\ne' },
    ]);
  });

  it('joins a line sent a character at a time, and a UTF-8 character split between chunks', async () => {
    const bytes = new TextEncoder().encode('data: héllo €\n\n');
    expect(await events(Array.from(bytes, (b) => new Uint8Array([b])))).toEqual([{ event: 'message', data: 'héllo €' }]);
  });

  it('dispatches the last event of a body that ends without a blank line', async () => {
    expect(await events(['data: one\n\n: comment\ndata: two'])).toEqual([{ event: 'message', data: 'one' }, { event: 'message', data: 'two' }]);
  });

  it('throws past the line bound, also when the line never ends', async () => {
    await expect(events(['data: ', 'x'.repeat(60), 'x'.repeat(60)], { maxLineChars: 100 })).rejects.toThrow(SseLimitError);
    await expect(events([`data: ${'x'.repeat(200)}\n\n`], { maxLineChars: 100 })).rejects.toThrow(/line longer than 100/);
    expect(await events([`data: ${'x'.repeat(90)}\n\n`], { maxLineChars: 100 })).toHaveLength(1);
  });

  it('throws past the event bound when data lines never end their event', async () => {
    await expect(events(['data: aaaa\n'.repeat(50)], { maxEventChars: 100 })).rejects.toThrow(/event longer than 100/);
    expect(await events(['data: aaaa\n'.repeat(10) + '\n'], { maxEventChars: 100 })).toHaveLength(1);
  });
});
