import { execFile } from 'node:child_process';
import os from 'node:os';
import autocannon from 'autocannon';
import { promisify } from 'node:util';
import Fastify from 'fastify';

export interface LoadResult { rps: number; p50: number; p99: number; errors: number; non2xx: number; /** Answered in all (2xx or not). */ requests: number }

/**
 * Drives `url` with autocannon for `seconds` (or for `amount` requests in all) over `connections` and
 * returns throughput and latency.
 */
export async function load(url: string, opts: { connections?: number; seconds?: number; amount?: number; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}): Promise<LoadResult> {
  const r = await autocannon({
    url,
    connections: opts.connections ?? 10,
    duration: opts.seconds ?? 5,
    ...(opts.amount ? { amount: opts.amount } : {}),
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
  });
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx, requests: r.requests.total };
}

/** The baseline every HTTP scenario is compared with: a bare Fastify hello-world in the same process. */
export async function helloWorld(): Promise<{ url: string; close: () => Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get('/', async () => ({ hello: 'world' }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}/`, close: () => app.close() };
}

export function machine(): string {
  return `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 1024 ** 3)} GiB, node ${process.version}`;
}

/** The middle value (the mean of the two middle ones for an even count), rounded. */
/**
 * GETs `url` in a loop, 5 ms apart, until `until` settles: each request's latency in ms (how long other
 * requests waited while a hostile one ran). A status other than 200 stops the loop with an error.
 */
export async function pollWhile(url: string, until: Promise<unknown>, headers: Record<string, string> = {}, statuses?: Record<number, number>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true));
  const ms: number[] = [];
  while (!done) {
    const t0 = performance.now();
    const r = await fetch(url, { headers });
    await r.arrayBuffer();
    // With `statuses`, every answer is counted there by status (and timed); without, anything but a 200 is an error.
    if (statuses) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    else if (r.status !== 200) throw new Error(`${url} answered ${r.status}`);
    ms.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return ms;
}

/** Two decimals, for figures printed in ms or KB. */
export const round2 = (x: number): number => Math.round(x * 100) / 100;

/** Polls' count, median and worst latency, in ms. */
export function latencySummary(ms: number[]): { polls: number; p50Ms: number; maxMs: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  return { polls: ms.length, p50Ms: round2(percentile(sorted, 50)), maxMs: round2(sorted.at(-1) ?? NaN) };
}

/** The median, exact (the mean of the middle two for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Runs a scenario when its file is executed directly (`node --import tsx bench/<name>.ts`):
 * prepares the test database templates, prints one JSON line and exits.
 */
export async function runIfMain(moduleUrl: string, scenario: string, run: () => Promise<Record<string, unknown>>): Promise<void> {
  const { pathToFileURL } = await import('node:url');
  if (!process.argv[1] || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  process.env.WEFT_TEST_DB ??= 'pglite';
  const { ensureTemplates } = await import('../test/support/global-setup.js');
  await ensureTemplates();
  const figures = await run();
  process.stdout.write(JSON.stringify({
    scenario, date: new Date().toISOString(), machine: machine(), database: process.env.DATABASE_URL ? 'postgres' : 'pglite', ...figures,
  }) + '\n');
  process.exit(0);
}

/** `weft <args> --json` against a running server's data directory (the CLI reaches it through its admin socket). */
export async function weftCli<T>(dataDir: string, args: string[]): Promise<T> {
  const { stdout } = await promisify(execFile)(process.execPath, ['dist/main.js', ...args, '--json'], { env: { ...process.env, WEFT_DATA_DIR: dataDir } });
  return JSON.parse(stdout) as T;
}

/** One API request with a key; the body parsed as JSON ({} when empty). */
export async function apiCall(url: string, key: string, method: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url, {
    method, headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}
