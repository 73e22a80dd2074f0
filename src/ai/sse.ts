/** Server-sent events: reading an upstream stream and writing ours. */

export interface SseEvent {
  event: string;
  data: string;
}

/**
 * The largest line, and the largest event (its data lines together), an upstream stream may send, in UTF-16
 * code units. A chat-completion chunk is a few hundred bytes; without a bound an upstream sending megabytes
 * without a newline grew the buffer without end (docs/architecture.md, "Upstream answers are bounded").
 */
export const MAX_SSE_LINE_CHARS = 1 << 20;
export const MAX_SSE_EVENT_CHARS = 1 << 20;

/** A stream that broke the line or event bound: reading stops there. */
export class SseLimitError extends Error {
  constructor(readonly what: 'line' | 'event', readonly limitChars: number) {
    super(`The stream sent ${what === 'line' ? 'a line' : 'an event'} longer than ${limitChars} characters`);
  }
}

export interface SseLimits {
  maxLineChars?: number;
  maxEventChars?: number;
}

/**
 * Yields the events of an SSE body as they complete (WHATWG rules: lines end in LF, CRLF or CR;
 * `data` lines of one event are joined by LF; a blank line dispatches; comments are skipped).
 * Each chunk is scanned once (a line split over chunks is not scanned again), and a line or an event past
 * its limit throws SseLimitError.
 */
export async function* readSse(body: AsyncIterable<Uint8Array>, limits: SseLimits = {}): AsyncGenerator<SseEvent> {
  const maxLine = limits.maxLineChars ?? MAX_SSE_LINE_CHARS;
  const maxEvent = limits.maxEventChars ?? MAX_SSE_EVENT_CHARS;
  const decoder = new TextDecoder();
  /** The start of a line whose end has not arrived yet. */
  let partial = '';
  /** The last chunk ended in CR: an LF opening the next one ends no second line. */
  let skipLf = false;
  let event = '';
  let data: string[] = [];
  let dataChars = 0;
  let sawData = false;
  // One per stream: a global regex's lastIndex would be shared by the streams interleaving at each yield.
  const lineBreak = /\r\n|\r|\n/g;
  const takeLine = (line: string): SseEvent | undefined => {
    if (line === '') {
      if (!sawData) {
        event = '';
        return undefined;
      }
      const out = { event: event || 'message', data: data.join('\n') };
      event = '';
      data = [];
      dataChars = 0;
      sawData = false;
      return out;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      dataChars += value.length + 1;
      if (dataChars > maxEvent) throw new SseLimitError('event', maxEvent);
      data.push(value);
      sawData = true;
    } else if (field === 'event') {
      event = value;
    }
    return undefined;
  };
  const lineOf = (rest: string): string => {
    if (partial.length + rest.length > maxLine) throw new SseLimitError('line', maxLine);
    const line = partial + rest;
    partial = '';
    return line;
  };
  for await (const chunk of body) {
    const text = decoder.decode(chunk, { stream: true });
    let start = 0;
    if (skipLf && text.length > 0) {
      if (text.charCodeAt(0) === 10) start = 1;
      skipLf = false;
    }
    lineBreak.lastIndex = start;
    for (let m = lineBreak.exec(text); m; m = lineBreak.exec(text)) {
      const line = lineOf(text.slice(start, m.index));
      start = lineBreak.lastIndex;
      if (m[0] === '\r' && start === text.length) skipLf = true;
      const ev = takeLine(line);
      if (ev) yield ev;
    }
    if (start < text.length) {
      if (partial.length + text.length - start > maxLine) throw new SseLimitError('line', maxLine);
      partial += text.slice(start);
    }
  }
  const tail = decoder.decode();
  if (partial.length > 0 || tail.length > 0) {
    const ev = takeLine(lineOf(tail));
    if (ev) yield ev;
  }
  const last = takeLine('');
  if (last) yield last;
}

/** One `data:` event carrying a JSON value. */
export const sseData = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;

export const SSE_DONE = 'data: [DONE]\n\n';
