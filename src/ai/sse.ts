/** Server-sent events: reading an upstream stream and writing ours. */

export interface SseEvent {
  event: string;
  data: string;
}

/**
 * Yields the events of an SSE body as they complete (WHATWG rules: lines end in LF, CRLF or CR;
 * `data` lines of one event are joined by LF; a blank line dispatches; comments are skipped).
 */
export async function* readSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let sawData = false;
  const takeLine = (line: string): SseEvent | undefined => {
    if (line === '') {
      if (!sawData) {
        event = '';
        return undefined;
      }
      const out = { event: event || 'message', data: data.join('\n') };
      event = '';
      data = [];
      sawData = false;
      return out;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      data.push(value);
      sawData = true;
    } else if (field === 'event') {
      event = value;
    }
    return undefined;
  };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      // A CR at the very end may be followed by an LF in the next chunk: wait for it.
      if (c === 13 && i === buffer.length - 1) break;
      const line = buffer.slice(start, i);
      if (c === 13 && buffer.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
      const ev = takeLine(line);
      if (ev) yield ev;
    }
    buffer = buffer.slice(start);
  }
  buffer += decoder.decode();
  if (buffer.length > 0) {
    const ev = takeLine(buffer.replace(/\r$/, ''));
    if (ev) yield ev;
  }
  const last = takeLine('');
  if (last) yield last;
}

/** One `data:` event carrying a JSON value. */
export const sseData = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;

export const SSE_DONE = 'data: [DONE]\n\n';
