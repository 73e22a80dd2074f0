// Result mode runs a delivery's workflow at most once: a holder that loses its claim stops its run, and
// whoever holds the claim next answers for that run (or says it is still in progress), never runs it again.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { hook, post, runsOf, webhookWorkflow } from './support.js';

let t: TestServer;
let upstream: http.Server;
let upstreamUrl: string;
/** Calls the workflows made (their side effects), by path. */
const hits: Record<string, number> = {};
/** Called when a request arrives, and when one is abandoned by its caller (the run stopped). */
let onHit: ((path: string) => void) | undefined;
let onAbandoned: ((path: string) => void) | undefined;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const path = req.url ?? '/';
    hits[path] = (hits[path] ?? 0) + 1;
    onHit?.(path);
    // Never answered: the run waits here until it is stopped.
    res.on('close', () => onAbandoned?.(path));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const addr = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  t = await startTestServer({ env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_WEBHOOK_LEASE_MS: '600' } });
});
afterAll(async () => {
  await t?.close();
  upstream.closeAllConnections();
  upstream.close();
});

const waitFor = (pick: (f: (path: string) => void) => void, path: string) =>
  new Promise<void>((resolve) => pick((p) => p === path && resolve()));

/** Wraps the server's database so the claim renewals of webhook deliveries go through `renewal`. */
function interceptRenewals(renewal: (run: () => Promise<unknown[]>) => Promise<unknown[]>): () => void {
  const db = t.server.ctx.db as Database & { query: Database['query'] };
  const original = db.query;
  db.query = function (this: Database, text: string, params?: readonly unknown[]) {
    const run = () => original.call(db, text, params);
    return (text.includes('UPDATE webhook_deliveries SET lease_until = now() +') ? renewal(run) : run()) as never;
  } as Database['query'];
  return () => {
    db.query = original;
  };
}

const sideEffectWorkflow = (path: string) => ({
  blocks: [hook({ responseMode: 'result' }), { id: 'call', type: 'http', name: 'Call', config: { url: `${upstreamUrl}${path}` } }],
  edges: [{ from: 'hook', to: 'call' }],
});

describe('result mode: a lost claim', () => {
  it('a renewal that fails stops the run; its answer is stored and a retry gets it without a second run', async () => {
    const { id, url } = await webhookWorkflow(t, sideEffectWorkflow('/renewal-fails'));
    const called = waitFor((f) => (onHit = f), '/renewal-fails');
    const stopped = waitFor((f) => (onAbandoned = f), '/renewal-fails');
    const delivery = { 'x-github-delivery': 'renewal-fails-1' };
    const first = post(url, { a: 1 }, delivery);
    await called;
    const restore = interceptRenewals(() => Promise.reject(new Error('renewal refused (injected)')));
    try {
      await stopped; // the run was stopped: its HTTP call abandoned
      const answer = await first;
      expect(answer.status).toBe(499);
      expect(answer.body).toMatchObject({ success: false });
    } finally {
      restore();
    }
    const retry = await post(url, { a: 1 }, delivery);
    expect(retry.status).toBe(499);
    expect(retry.text).toBe((await first).text);
    expect(hits['/renewal-fails']).toBe(1);
    const runs = await runsOf(t, id);
    expect(runs.map((r) => r.status)).toEqual(['cancelled']);
  });

  it('a duplicate that takes over a lapsed claim mid-run gets 409, not a second run; the first holder stops its run', async () => {
    const { id, url } = await webhookWorkflow(t, sideEffectWorkflow('/taken-over'));
    const called = waitFor((f) => (onHit = f), '/taken-over');
    const stopped = waitFor((f) => (onAbandoned = f), '/taken-over');
    const delivery = { 'x-github-delivery': 'taken-over-1' };
    const first = post(url, { a: 1 }, delivery);
    await called;
    // Renewals stall (a slow database): the lease lapses while the run goes on.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const restore = interceptRenewals(async (run) => {
      await gate;
      return run();
    });
    try {
      const lapsed = async () => (await t.server.ctx.db.query<{ lapsed: boolean }>(
        `SELECT lease_until < now() AS lapsed FROM webhook_deliveries WHERE workflow_id = $1`, [id]))[0]?.lapsed;
      while (!(await lapsed())) await new Promise((r) => setTimeout(r, 50));
      const duplicate = await post(url, { a: 1 }, delivery);
      expect(duplicate.status).toBe(409);
      expect(duplicate.body).toEqual({ error: 'This delivery is still being processed' });
      expect(duplicate.headers.get('retry-after')).toBe('5');
      expect(hits['/taken-over']).toBe(1);
    } finally {
      restore();
      release();
    }
    // The stalled renewal finds the claim taken over: the first holder stops its run and stores nothing.
    await stopped;
    expect((await first).status).toBe(409);
    // The next retry answers for the stopped run; later ones get the same stored bytes.
    const retry = await post(url, { a: 1 }, delivery);
    expect(retry.status).toBe(499);
    expect((await post(url, { a: 1 }, delivery)).text).toBe(retry.text);
    expect(hits['/taken-over']).toBe(1);
    expect((await runsOf(t, id)).map((r) => r.status)).toEqual(['cancelled']);
  });
});
