// Local HTTP servers speaking each provider's real wire format (OpenAI chat completions,
// Anthropic Messages, Google Gemini generateContent, and an OpenAI-compatible server with
// /models), non-streaming and streaming. Tests script the answers through `handler`.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeProvider = 'openai' | 'anthropic' | 'gemini' | 'compat';

export interface FakeReply {
  /** Assistant text. */
  text?: string;
  /** Tool calls the model makes. */
  toolCalls?: { id?: string; name: string; arguments: Record<string, unknown> }[];
  /** Token usage reported; null: report none. Default 100 prompt / 50 completion. */
  usage?: { prompt: number; completion: number } | null;
  /** Answer with this HTTP error instead. */
  status?: number;
  errorMessage?: string;
  /** Wait before answering. */
  delayMs?: number;
  /** Stream: text pieces (default: split into 4). */
  pieces?: number;
  /** Stream: wait between pieces. */
  pieceDelayMs?: number;
  /** Stream: after this many text pieces stop sending and keep the connection open. */
  hangAfterPieces?: number;
  /** Stream: after this many pieces, send a provider error event and end. */
  failAfterPieces?: number;
  /** Stream: the message of that error event (default: each provider's usual text). */
  streamErrorMessage?: string;
  /** Answer only once this settles (a test holds requests in flight, then lets them finish). */
  hold?: Promise<unknown>;
  /** Finish reason in the provider's own vocabulary is derived from this. */
  finish?: 'stop' | 'length';
  /** Answer 200 with a body that is not JSON (a whole answer), or a stream event that is not JSON. */
  malformed?: boolean;
}

export interface RecordedRequest {
  provider: FakeProvider;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export interface FakeProviders {
  url: string;
  /** Base URLs as the gateway's env variables expect them. */
  env: Record<string, string>;
  requests: RecordedRequest[];
  handler: (req: RecordedRequest) => FakeReply;
  /** Streams whose client went away before they ended. */
  abortedStreams: number;
  /** Streams open right now. */
  openStreams: number;
  compatModels: string[];
  close(): Promise<void>;
}

const defaultReply = (req: RecordedRequest): FakeReply => ({ text: `Hello from ${req.provider}`, usage: { prompt: 100, completion: 50 } });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function split(text: string, n: number): string[] {
  if (!text) return [];
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function errorBody(provider: FakeProvider, status: number, message: string) {
  if (provider === 'anthropic') return { type: 'error', error: { type: status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error', message } };
  if (provider === 'gemini') return { error: { code: status, message, status: status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT' } };
  return { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } };
}

export async function startFakeProviders(): Promise<FakeProviders> {
  const fake: FakeProviders = {
    url: '',
    env: {},
    requests: [],
    handler: defaultReply,
    abortedStreams: 0,
    openStreams: 0,
    compatModels: ['llama3.2:1b', 'qwen2.5:0.5b'],
    close: async () => undefined,
  };

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const raw = await readBody(req);
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      return json(res, 400, { error: { message: 'bad json' } });
    }
    const p = url.pathname;
    let provider: FakeProvider | undefined;
    if (p.startsWith('/openai/')) provider = 'openai';
    else if (p.startsWith('/anthropic/')) provider = 'anthropic';
    else if (p.startsWith('/gemini/')) provider = 'gemini';
    else if (p.startsWith('/compat/')) provider = 'compat';
    if (!provider) return json(res, 404, { error: { message: 'unknown path' } });
    const rec: RecordedRequest = { provider, method: req.method ?? 'GET', path: p + url.search, headers: req.headers, body };

    if (provider === 'compat' && p === '/compat/v1/models') {
      return json(res, 200, { object: 'list', data: fake.compatModels.map((id) => ({ id, object: 'model', created: 1, owned_by: 'library' })) });
    }
    fake.requests.push(rec);
    const reply = fake.handler(rec);
    if (reply.delayMs) await sleep(reply.delayMs);
    if (reply.hold) await reply.hold;
    if (reply.status && reply.status >= 400) return json(res, reply.status, errorBody(provider, reply.status, reply.errorMessage ?? 'upstream failure'));

    const stream = provider === 'gemini' ? p.includes(':streamGenerateContent') : body?.stream === true;
    if (reply.malformed && !stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"choices": [ this is not json');
    }
    if (reply.malformed) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Named like a content event, so a parser that dispatches on event names reads it too.
      return res.end('event: content_block_delta\ndata: {"truncated": \n\n');
    }
    if (!stream) {
      if (provider === 'anthropic') return json(res, 200, anthropicMessage(body, reply));
      if (provider === 'gemini') return json(res, 200, geminiResponse(reply, reply.text ?? '', true));
      return json(res, 200, openaiCompletion(body, reply));
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    fake.openStreams++;
    let ended = false;
    res.on('close', () => {
      fake.openStreams--;
      if (!ended) fake.abortedStreams++;
    });
    const send = (s: string) => {
      if (!res.destroyed) res.write(s);
    };
    const pieces = split(reply.text ?? '', reply.pieces ?? 4);
    const writer = provider === 'anthropic' ? anthropicStream : provider === 'gemini' ? geminiStream : openaiStream;
    const done = await writer(body, reply, pieces, send, () => res.destroyed);
    if (done === 'hang') return; // keep the connection open until the client leaves
    ended = true;
    res.end();
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  fake.url = `http://127.0.0.1:${port}`;
  fake.env = {
    OPENAI_API_KEY: 'sk-fake-openai',
    OPENAI_BASE_URL: `${fake.url}/openai/v1`,
    ANTHROPIC_API_KEY: 'sk-fake-anthropic',
    ANTHROPIC_BASE_URL: `${fake.url}/anthropic`,
    GEMINI_API_KEY: 'fake-gemini',
    GEMINI_BASE_URL: `${fake.url}/gemini`,
    OPENAI_COMPATIBLE_BASE_URL: `${fake.url}/compat/v1`,
  };
  fake.close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return fake;
}

// ---------------------------------------------------------------------------------------------
// OpenAI chat completions
// ---------------------------------------------------------------------------------------------

function openaiCompletion(body: any, reply: FakeReply) {
  const toolCalls = (reply.toolCalls ?? []).map((t, i) => ({ id: t.id ?? `call_${i}`, type: 'function', function: { name: t.name, arguments: JSON.stringify(t.arguments) } }));
  const u = reply.usage === undefined ? { prompt: 100, completion: 50 } : reply.usage;
  return {
    id: 'chatcmpl-upstream',
    object: 'chat.completion',
    created: 1700000000,
    model: body?.model,
    system_fingerprint: 'fp_fake',
    choices: [{
      index: 0,
      message: { role: 'assistant', content: toolCalls.length && !reply.text ? null : (reply.text ?? ''), refusal: null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
      logprobs: null,
      finish_reason: toolCalls.length ? 'tool_calls' : (reply.finish ?? 'stop'),
    }],
    ...(u ? { usage: { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.prompt + u.completion } } : {}),
  };
}

type Send = (s: string) => void;

async function openaiStream(body: any, reply: FakeReply, pieces: string[], send: Send, gone: () => boolean): Promise<'hang' | 'done'> {
  const base = { id: 'chatcmpl-upstream', object: 'chat.completion.chunk', created: 1700000000, model: body?.model, system_fingerprint: 'fp_fake' };
  const includeUsage = body?.stream_options?.include_usage === true;
  const ev = (o: unknown) => send(`data: ${JSON.stringify(o)}\n\n`);
  ev({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], ...(includeUsage ? { usage: null } : {}) });
  for (let i = 0; i < pieces.length; i++) {
    if (reply.hangAfterPieces !== undefined && i >= reply.hangAfterPieces) return 'hang';
    if (reply.failAfterPieces !== undefined && i >= reply.failAfterPieces) {
      ev({ error: { message: reply.streamErrorMessage ?? 'The server had an error while processing your request.', type: 'server_error', code: null } });
      return 'done';
    }
    if (reply.pieceDelayMs) await sleep(reply.pieceDelayMs);
    if (gone()) return 'done';
    ev({ ...base, choices: [{ index: 0, delta: { content: pieces[i] }, logprobs: null, finish_reason: null }], ...(includeUsage ? { usage: null } : {}) });
  }
  if (reply.hangAfterPieces !== undefined && pieces.length <= reply.hangAfterPieces) return 'hang';
  (reply.toolCalls ?? []).forEach((t, i) => {
    const args = JSON.stringify(t.arguments);
    const half = Math.floor(args.length / 2);
    ev({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: i, id: t.id ?? `call_${i}`, type: 'function', function: { name: t.name, arguments: '' } }] }, finish_reason: null }] });
    ev({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: i, function: { arguments: args.slice(0, half) } }] }, finish_reason: null }] });
    ev({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: i, function: { arguments: args.slice(half) } }] }, finish_reason: null }] });
  });
  ev({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: reply.toolCalls?.length ? 'tool_calls' : (reply.finish ?? 'stop') }], ...(includeUsage ? { usage: null } : {}) });
  const u = reply.usage === undefined ? { prompt: 100, completion: 50 } : reply.usage;
  if (includeUsage && u) ev({ ...base, choices: [], usage: { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.prompt + u.completion } });
  send('data: [DONE]\n\n');
  return 'done';
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------------------

function anthropicMessage(body: any, reply: FakeReply) {
  const content: any[] = [];
  if (reply.text) content.push({ type: 'text', text: reply.text });
  (reply.toolCalls ?? []).forEach((t, i) => content.push({ type: 'tool_use', id: t.id ?? `toolu_${i}`, name: t.name, input: t.arguments }));
  const u = reply.usage === undefined ? { prompt: 100, completion: 50 } : reply.usage;
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model: body?.model,
    content,
    stop_reason: reply.toolCalls?.length ? 'tool_use' : reply.finish === 'length' ? 'max_tokens' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: u?.prompt ?? 0, output_tokens: u?.completion ?? 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

async function anthropicStream(body: any, reply: FakeReply, pieces: string[], send: Send, gone: () => boolean): Promise<'hang' | 'done'> {
  const ev = (name: string, o: unknown) => send(`event: ${name}\ndata: ${JSON.stringify(o)}\n\n`);
  const u = reply.usage === undefined ? { prompt: 100, completion: 50 } : reply.usage;
  ev('message_start', {
    type: 'message_start',
    message: { id: 'msg_fake', type: 'message', role: 'assistant', model: body?.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: u?.prompt ?? 0, output_tokens: 1 } },
  });
  let index = 0;
  if (pieces.length) {
    ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    ev('ping', { type: 'ping' });
    for (let i = 0; i < pieces.length; i++) {
      if (reply.hangAfterPieces !== undefined && i >= reply.hangAfterPieces) return 'hang';
      if (reply.failAfterPieces !== undefined && i >= reply.failAfterPieces) {
        ev('error', { type: 'error', error: { type: 'overloaded_error', message: reply.streamErrorMessage ?? 'Overloaded' } });
        return 'done';
      }
      if (reply.pieceDelayMs) await sleep(reply.pieceDelayMs);
      if (gone()) return 'done';
      ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: pieces[i] } });
    }
    ev('content_block_stop', { type: 'content_block_stop', index });
    index++;
  }
  if (reply.hangAfterPieces !== undefined && pieces.length <= reply.hangAfterPieces) return 'hang';
  for (const [i, t] of (reply.toolCalls ?? []).entries()) {
    const args = JSON.stringify(t.arguments);
    const half = Math.floor(args.length / 2);
    ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: t.id ?? `toolu_${i}`, name: t.name, input: {} } });
    ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: '' } });
    ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args.slice(0, half) } });
    ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args.slice(half) } });
    ev('content_block_stop', { type: 'content_block_stop', index });
    index++;
  }
  ev('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: reply.toolCalls?.length ? 'tool_use' : reply.finish === 'length' ? 'max_tokens' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: u?.completion ?? 0 },
  });
  ev('message_stop', { type: 'message_stop' });
  return 'done';
}

// ---------------------------------------------------------------------------------------------
// Gemini generateContent
// ---------------------------------------------------------------------------------------------

function geminiResponse(reply: FakeReply, text: string, final: boolean, withTools = true) {
  const parts: any[] = [];
  if (text) parts.push({ text });
  if (withTools) for (const t of reply.toolCalls ?? []) parts.push({ functionCall: { name: t.name, args: t.arguments } });
  const u = reply.usage === undefined ? { prompt: 100, completion: 50 } : reply.usage;
  return {
    candidates: [{
      content: { parts, role: 'model' },
      ...(final ? { finishReason: reply.finish === 'length' ? 'MAX_TOKENS' : 'STOP' } : {}),
      index: 0,
    }],
    ...(u ? { usageMetadata: { promptTokenCount: u.prompt, candidatesTokenCount: u.completion, totalTokenCount: u.prompt + u.completion } } : {}),
    modelVersion: 'gemini-fake',
  };
}

async function geminiStream(_body: any, reply: FakeReply, pieces: string[], send: Send, gone: () => boolean): Promise<'hang' | 'done'> {
  const ev = (o: unknown) => send(`data: ${JSON.stringify(o)}\r\n\r\n`);
  const u = reply.usage === undefined ? { prompt: 100, completion: 50 } : reply.usage;
  for (let i = 0; i < pieces.length; i++) {
    if (reply.hangAfterPieces !== undefined && i >= reply.hangAfterPieces) return 'hang';
    if (reply.failAfterPieces !== undefined && i >= reply.failAfterPieces) {
      ev({ error: { code: 503, message: reply.streamErrorMessage ?? 'The model is overloaded.', status: 'UNAVAILABLE' } });
      return 'done';
    }
    if (reply.pieceDelayMs) await sleep(reply.pieceDelayMs);
    if (gone()) return 'done';
    const last = i === pieces.length - 1 && !reply.toolCalls?.length;
    const chunk: any = geminiResponse({ ...reply, usage: u ? { prompt: u.prompt, completion: last ? u.completion : i + 1 } : null }, pieces[i], last, false);
    ev(chunk);
  }
  if (reply.hangAfterPieces !== undefined && pieces.length <= reply.hangAfterPieces) return 'hang';
  if (reply.toolCalls?.length || pieces.length === 0) ev(geminiResponse(reply, '', true, true));
  return 'done';
}
