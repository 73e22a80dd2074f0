// ai-gateway-overhead: what Weft's AI gateway adds to a chat completion (auth, routing, deposit
// reserve, settle, usage event) against an upstream that answers instantly, beside the same
// client calling that upstream directly, in one run.
//
//   node --no-node-snapshot --import tsx bench/ai-gateway-overhead.ts     (one JSON line)
//
// Single flight: N sequential requests each way, latency to the whole body (non-streaming) and to
// the first content chunk (streaming). Throughput: autocannon at 10 connections each way.
// With BENCH_PORTKEY_SERVER=<path to @portkey-ai/gateway's build/start-server.js> (installed
// outside the project, e.g. `npm install --prefix /tmp/portkey @portkey-ai/gateway`), Portkey's
// open-source gateway runs as a child process in front of the same upstream and is measured the
// same way.
//
// Settlements are written after the answer within WEFT_AI_SETTLE_WINDOW_MS, 50 ms unless the caller's
// environment says otherwise (the server's default; 0 measures the settle-before-answer path).
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestServer } from '../test/support/harness.js';
import { load, percentile, runIfMain } from './support.js';

const body = {
  id: 'chatcmpl-upstream', object: 'chat.completion', created: 1700000000, model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello! How can I help you today?', refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
};
const bodyText = JSON.stringify(body);
const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-upstream', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
const streamText = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Hello!' }),
  chunk({ content: ' How can I' }),
  chunk({ content: ' help you today?' }),
  chunk({}, 'stop'),
  `data: ${JSON.stringify({ id: 'chatcmpl-upstream', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini', choices: [], usage: body.usage })}\n\n`,
  'data: [DONE]\n\n',
].join('');

/** An OpenAI-compatible upstream that answers at once. */
async function instantUpstream(): Promise<{ base: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const stream = Buffer.concat(parts).includes('"stream":true');
      if (stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.end(streamText);
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(bodyText) });
        res.end(bodyText);
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

async function timeWhole(url: string, headers: Record<string, string>, payload: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers, body: payload });
  await res.text();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return performance.now() - t0;
}

/** Time to the first chunk carrying content; the rest of the stream is read to the end. */
async function timeFirstChunk(url: string, headers: Record<string, string>, payload: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers, body: payload });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let seen = '';
  let first = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (!first) {
      seen += dec.decode(value, { stream: true });
      if (seen.includes('"content":"Hello!"')) first = performance.now() - t0;
    }
  }
  if (!first) throw new Error('no content chunk');
  return first;
}

async function series(n: number, f: () => Promise<number>): Promise<{ p50: number; p99: number }> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) xs.push(await f());
  xs.sort((a, b) => a - b);
  return { p50: +percentile(xs, 50).toFixed(3), p99: +percentile(xs, 99).toFixed(3) };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function startPortkey(server: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [server, `--port=${port}`, '--headless'], { env: { ...process.env, NODE_ENV: 'production' }, stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(url);
      return { url, child };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill();
  throw new Error('Portkey did not start');
}

export async function run(): Promise<Record<string, number>> {
  const n = Number(process.env.BENCH_REQUESTS ?? 2000);
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const upstream = await instantUpstream();
  const settleWindowMs = process.env.WEFT_AI_SETTLE_WINDOW_MS ?? '50';
  const t = await startTestServer({
    env: {
      OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: upstream.base, WEFT_AI_STARTING_CREDITS_USD: '1000000', WEFT_LIMITS: 'off',
      WEFT_AI_SETTLE_WINDOW_MS: settleWindowMs,
    },
  });
  try {
    const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there, how are you?' }], max_tokens: 64 };
    const plain = JSON.stringify(request);
    const streaming = JSON.stringify({ ...request, stream: true });
    const direct = { url: `${upstream.base}/chat/completions`, headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' } };
    const weft = { url: `${t.url}/api/v1/ai/chat/completions`, headers: { 'content-type': 'application/json', authorization: `Bearer ${t.apiKey}` } };

    // Warm both paths (JIT, keep-alive sockets, tokenizer).
    for (let i = 0; i < 200; i++) {
      await timeWhole(direct.url, direct.headers, plain);
      await timeWhole(weft.url, weft.headers, plain);
      await timeFirstChunk(weft.url, weft.headers, streaming);
    }
    const directWhole = await series(n, () => timeWhole(direct.url, direct.headers, plain));
    const weftWhole = await series(n, () => timeWhole(weft.url, weft.headers, plain));
    const directFirst = await series(n, () => timeFirstChunk(direct.url, direct.headers, streaming));
    const weftFirst = await series(n, () => timeFirstChunk(weft.url, weft.headers, streaming));

    const directLoad = await load(direct.url, { seconds, method: 'POST', headers: direct.headers, body: plain });
    const weftLoad = await load(weft.url, { seconds, method: 'POST', headers: weft.headers, body: plain });
    const directStreamLoad = await load(direct.url, { seconds, method: 'POST', headers: direct.headers, body: streaming });
    const weftStreamLoad = await load(weft.url, { seconds, method: 'POST', headers: weft.headers, body: streaming });
    if (weftLoad.non2xx || weftStreamLoad.non2xx || weftLoad.errors || weftStreamLoad.errors) throw new Error('Weft answered errors under load');

    const portkey: Record<string, number> = {};
    if (process.env.BENCH_PORTKEY_SERVER) {
      const pk = await startPortkey(process.env.BENCH_PORTKEY_SERVER);
      try {
        const via = {
          url: `${pk.url}/v1/chat/completions`,
          headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': upstream.base },
        };
        for (let i = 0; i < 200; i++) await timeWhole(via.url, via.headers, plain);
        const whole = await series(n, () => timeWhole(via.url, via.headers, plain));
        const pkLoad = await load(via.url, { seconds, method: 'POST', headers: via.headers, body: plain });
        Object.assign(portkey, {
          portkey_p50_ms: whole.p50,
          portkey_p99_ms: whole.p99,
          portkey_rps: pkLoad.rps,
          weft_to_portkey_rps: +(weftLoad.rps / Math.max(1, pkLoad.rps)).toFixed(3),
        });
        // Portkey 1.15's streaming fails on Node 20 (it appends to a fetch Response's immutable
        // headers): its streaming figures are left out when that happens.
        try {
          const first = await series(n, () => timeFirstChunk(via.url, via.headers, streaming));
          const pkStreamLoad = await load(via.url, { seconds, method: 'POST', headers: via.headers, body: streaming });
          if (!pkStreamLoad.non2xx) Object.assign(portkey, { portkey_stream_first_chunk_p50_ms: first.p50, portkey_stream_rps: pkStreamLoad.rps });
        } catch {
          // streaming unavailable
        }
      } finally {
        pk.child.kill();
      }
    }

    // Requests cut off when the load generator stopped still settle; write the window, then wait for them.
    await t.server.services.ai.ledger.flush();
    let open = 0;
    for (let i = 0; i < 100; i++) {
      open = (await t.server.ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM ai_requests WHERE status = 'reserved'"))[0].n;
      if (open === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    return {
      requests_single_flight: n,
      direct_p50_ms: directWhole.p50,
      direct_p99_ms: directWhole.p99,
      weft_p50_ms: weftWhole.p50,
      weft_p99_ms: weftWhole.p99,
      added_p50_ms: +(weftWhole.p50 - directWhole.p50).toFixed(3),
      added_p99_ms: +(weftWhole.p99 - directWhole.p99).toFixed(3),
      stream_first_chunk_direct_p50_ms: directFirst.p50,
      stream_first_chunk_direct_p99_ms: directFirst.p99,
      stream_first_chunk_weft_p50_ms: weftFirst.p50,
      stream_first_chunk_weft_p99_ms: weftFirst.p99,
      stream_added_p50_ms: +(weftFirst.p50 - directFirst.p50).toFixed(3),
      settle_window_ms: Number(settleWindowMs),
      connections: 10,
      direct_rps: directLoad.rps,
      weft_rps: weftLoad.rps,
      weft_to_direct_rps: +(weftLoad.rps / Math.max(1, directLoad.rps)).toFixed(3),
      weft_load_p50_ms: weftLoad.p50,
      weft_load_p99_ms: weftLoad.p99,
      direct_stream_rps: directStreamLoad.rps,
      weft_stream_rps: weftStreamLoad.rps,
      weft_stream_load_p99_ms: weftStreamLoad.p99,
      ...portkey,
      reservations_left_open: open,
    };
  } finally {
    await t.close();
    await upstream.close();
  }
}

await runIfMain(import.meta.url, 'ai-gateway-overhead', run);
