// A server-sent events reader over a fetch body (ReadableStream), for browsers and Node alike.

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * The events of a text/event-stream body, as the stream delivers them. Ending the iteration early
 * (break, return, throw) cancels the body, which closes the connection.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let event = '';
  let id: string | undefined;
  const line = (text: string): SseEvent | undefined => {
    if (text === '') {
      const out = data.length > 0 ? { event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) } : undefined;
      data = [];
      event = '';
      return out;
    }
    if (text.startsWith(':')) return undefined;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
    return undefined;
  };
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // Lines end with \r\n, \n or \r; a trailing \r may be the first half of \r\n, so it waits.
      let match: RegExpExecArray | null;
      const eol = /\r\n|\n|\r(?!$)/g;
      let start = 0;
      while ((match = eol.exec(buffer)) !== null) {
        const ev = line(buffer.slice(start, match.index));
        start = match.index + match[0].length;
        if (ev) yield ev;
      }
      buffer = buffer.slice(start);
      if (done) {
        if (buffer.endsWith('\r')) buffer = buffer.slice(0, -1);
        const tail = buffer === '' ? undefined : line(buffer);
        if (tail) yield tail;
        const last = line('');
        if (last) yield last;
        finished = true;
        return;
      }
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
