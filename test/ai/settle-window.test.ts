// The settle window (WEFT_AI_SETTLE_WINDOW_MS): a finished request's settlement is written after its answer,
// together with the others of the window. The rules that must still hold: a request never goes out without a
// deposit that covers it, a balance never goes below zero, and every settlement is in the database once
// the window is flushed, which shutdown does (docs/architecture.md, Credit ledgers).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { dbMode, freshDatabase, startTestServer, type TestResponse, type TestServer } from '../support/harness.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';

// gpt-4o at 100 prompt and 50 completion tokens (the fake's default usage): $0.00075 a request.
const COST_NANO = 750_000;
// Every deposit is the minimum deposit (max_tokens 16 costs far less): $0.05.
const DEPOSIT_USD = 0.05;

let fake: FakeProviders;
const open: TestServer[] = [];

beforeAll(async () => {
  fake = await startFakeProviders();
});
afterEach(async () => {
  while (open.length > 0) await open.pop()!.close();
});
afterAll(async () => {
  await fake?.close();
});

async function serverWithWindow(windowMs: number, reuse?: { dataDir?: string; databaseUrl?: string }, startingUsd = 1): Promise<TestServer> {
  const t = await startTestServer({
    reuse,
    env: {
      ...fake.env, WEFT_AI_SETTLE_WINDOW_MS: String(windowMs), WEFT_AI_MIN_DEPOSIT_USD: String(DEPOSIT_USD),
      WEFT_AI_STARTING_CREDITS_USD: String(startingUsd),
    },
  });
  open.push(t);
  return t;
}

const chat = (t: TestServer, stream = false): Promise<TestResponse> =>
  t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16, stream });

async function balanceUsd(t: TestServer): Promise<number> {
  const r = await t.call('GET', '/api/v1/ai/credits');
  expect(r.status).toBe(200);
  return (r.body as { balanceUsd: number }).balanceUsd;
}

async function ledgerKinds(t: TestServer): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  let cursor: string | undefined;
  do {
    const r = await t.call('GET', `/api/v1/ai/credits/ledger?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(r.status).toBe(200);
    const body = r.body as { data: { kind: string }[]; nextCursor?: string };
    for (const e of body.data) counts[e.kind] = (counts[e.kind] ?? 0) + 1;
    cursor = body.nextCursor;
  } while (cursor);
  return counts;
}

const usd = (nano: number): number => ledger.nanoToUsd(nano);

describe('settle window', () => {
  it('concurrent requests answered before their settlements are written still end at the right balance and usage', async () => {
    fake.handler = () => ({ text: 'ok' });
    // 24 deposits of $0.05 in flight at once fit in $2.
    const t = await serverWithWindow(200, undefined, 2);
    const n = 24;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => chat(t, i % 4 === 3)));
    for (const a of answers) expect(a.status).toBe(200);
    const whole = answers.filter((a) => a.headers.get('content-type')?.includes('application/json'));
    for (const a of whole) expect(a.headers.get('x-credits-used')).toBe('0.000750');
    if (dbMode() === 'pglite') {
      // The embedded ledger counts the charges waiting for their write: the balance is already the final one.
      expect(await balanceUsd(t)).toBeCloseTo(2 - usd(n * COST_NANO), 9);
    }
    await t.server.services.ai.ledger.flush();
    expect(await balanceUsd(t)).toBeCloseTo(2 - usd(n * COST_NANO), 9);
    const kinds = await ledgerKinds(t);
    expect(kinds.settle).toBe(n);
    const db = t.server.ctx.db;
    const rows = await db.query<{ n: number; charged: number }>(
      `SELECT count(*)::int AS n, sum(cost_nano)::int8 AS charged FROM ai_requests WHERE account = $1 AND status = 'settled'`,
      [`workspace:${t.workspaceId}`],
    );
    expect(Number(rows[0].n)).toBe(n);
    expect(Number(rows[0].charged)).toBe(n * COST_NANO);
    const usage = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM usage_events WHERE source = 'ai' AND account = $1`, [`workspace:${t.workspaceId}`]);
    expect(Number(usage[0].n)).toBe(n);
  });

  it('refuses a request whose deposit the balance does not cover, and never takes the balance below zero', async () => {
    // $0.12: two deposits of $0.05 fit, a third does not.
    const t = await serverWithWindow(200, undefined, 0.12);
    let release = (): void => undefined;
    const hold = new Promise<void>((r) => (release = r));
    let arrived = 0;
    fake.handler = () => {
      arrived++;
      return { text: 'ok', hold };
    };
    // The three that find no room are answered at once, while the two that fit wait at the provider.
    let refusedCount = 0;
    let allRefused = (): void => undefined;
    const threeRefused = new Promise<void>((r) => (allRefused = r));
    const calls = Array.from({ length: 5 }, () => chat(t).then((r) => {
      if (r.status === 402 && ++refusedCount === 3) allRefused();
      return r;
    }));
    await threeRefused;
    release();
    const statuses = (await Promise.all(calls)).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 402, 402, 402]);
    expect(arrived).toBe(2);
    await t.server.services.ai.ledger.flush();
    const after = await balanceUsd(t);
    expect(after).toBeCloseTo(0.12 - usd(2 * COST_NANO), 9);
    expect(after).toBeGreaterThanOrEqual(0);
  });

  it('a deposit refused while settlements wait: what they charge is never free again', async () => {
    // Exactly one deposit: after a request charged $0.00075 (not yet written), a second deposit does not fit.
    fake.handler = () => ({ text: 'ok' });
    const t = await serverWithWindow(1000, undefined, DEPOSIT_USD);
    expect((await chat(t)).status).toBe(200);
    expect((await chat(t)).status).toBe(402);
    await t.server.services.ai.ledger.flush();
    expect((await chat(t)).status).toBe(402);
    expect(await balanceUsd(t)).toBeCloseTo(DEPOSIT_USD - usd(COST_NANO), 9);
  });

  it('shutdown writes the settlements still waiting: after a restart every one is there', async () => {
    fake.handler = () => ({ text: 'ok' });
    const where = await freshDatabase();
    const first = await serverWithWindow(1000, where);
    const n = 10;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => chat(first, i % 2 === 1)));
    for (const a of answers) expect(a.status).toBe(200);
    await first.close();
    open.splice(open.indexOf(first), 1);
    const second = await serverWithWindow(0, where);
    expect(await balanceUsd(second)).toBeCloseTo(1 - usd(n * COST_NANO), 9);
    expect((await ledgerKinds(second)).settle).toBe(n);
  });
});
