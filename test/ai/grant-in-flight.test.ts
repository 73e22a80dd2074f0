// Credits taken away while AI requests are in flight. On the embedded database the deposits of requests in
// flight are held in memory, so the balance row still counts them: a negative grant that looked only at
// that row once took them, and the requests' settlements then broke the balance constraint (a 500 after the
// provider had answered, and no request row, ledger entry or usage event). A negative grant now takes only
// what is free, and a settlement charges at most what the balance holds, whatever changed it.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { dbMode } from '../support/harness.js';
import { runCli } from '../support/cli.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { startAiServer, type AiTestServer, type TestResponse } from './ai-server.js';

let t: AiTestServer;
let fake: FakeProviders;
let account: string;
/** The requests a test holds in flight, let go after it whatever happened (a failed test leaves none behind). */
let inFlight: { answers: Promise<unknown>; release: () => void } | undefined;

// Every deposit is the minimum deposit (max_tokens 16 of gpt-4o costs far less): $0.05 a request.
const DEPOSIT_USD = 0.05;
// 100 prompt and 50 completion tokens of gpt-4o: $0.00075.
const COST_NANO = 750_000;

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startAiServer({ env: { ...fake.env, WEFT_AI_MIN_DEPOSIT_USD: String(DEPOSIT_USD) } });
  account = `workspace:${t.workspaceId}`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function setBalance(usd: number) {
  await ledger.ensureAccount(t.db, account, 0);
  const diff = ledger.usdToNano(usd) - ((await ledger.getBalance(t.db, account))?.balanceNano ?? 0);
  if (diff !== 0) await ledger.grant(t.db, account, diff, 'test');
}

/**
 * Starts `n` requests (every third one streamed) whose provider answers only when `release` is called;
 * resolves once every one of them has reached the provider (so each holds its deposit).
 */
async function requestsInFlight(n: number): Promise<{ answers: Promise<TestResponse[]>; release: () => void }> {
  let release = (): void => undefined;
  const hold = new Promise<void>((r) => (release = r));
  let arrived = 0;
  let allArrived = (): void => undefined;
  const allIn = new Promise<void>((r) => (allArrived = r));
  fake.handler = () => {
    if (++arrived === n) allArrived();
    return { text: 'ok', usage: { prompt: 100, completion: 50 }, hold };
  };
  const answers = Promise.all(Array.from({ length: n }, (_, i) =>
    t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16, stream: i % 3 === 2 })));
  inFlight = { answers, release };
  await allIn;
  return { answers, release };
}

const cli = (args: string[]) => runCli([...args, '--json'], { WEFT_DATA_DIR: t.config.dataDir, DATABASE_URL: t.config.databaseUrl });
const credits = async () => (await t.call('GET', '/api/v1/ai/credits')).body as { balanceUsd: number; reservedUsd: number };

/** Each finished request: its row, its ledger entries (through the API) and its usage event. */
async function expectEveryRequestRecorded(n: number) {
  const rows = await t.db.query<{ id: string; status: string; cost_nano: number }>(
    `SELECT id, status, cost_nano::int8 AS cost_nano FROM ai_requests WHERE account = $1 ORDER BY created_at DESC LIMIT $2`, [account, n]);
  expect(rows).toHaveLength(n);
  const entries = (await t.call('GET', '/api/v1/ai/credits/ledger?limit=200')).body.data as { kind: string; requestId: string | null; costUsd: number | null }[];
  const events = await t.db.query<{ key: string; amount: number; billed: number; overage: number | null }>(
    `SELECT idempotency_key AS key, amount_usd::float8 AS amount, (metadata->>'billedUsd')::float8 AS billed, (metadata->>'overageUsd')::float8 AS overage
       FROM usage_events WHERE idempotency_key = ANY($1::text[])`,
    [rows.map((r) => `ai:${r.id}`)],
  );
  expect(events).toHaveLength(n);
  for (const r of rows) {
    expect(r.status).toBe('settled');
    const kinds = entries.filter((e) => e.requestId === r.id).map((e) => e.kind).sort();
    expect(kinds.filter((k) => k !== 'overage')).toEqual(['reserve', 'settle']);
    const event = events.find((e) => e.key === `ai:${r.id}`)!;
    // The usage event keeps the real cost; what was billed plus what was not is that cost.
    expect(event.amount).toBeCloseTo(COST_NANO / 1e9, 9);
    expect(event.billed + (event.overage ?? 0)).toBeCloseTo(COST_NANO / 1e9, 9);
    expect(Number(r.cost_nano)).toBe(ledger.usdToNano(event.billed));
  }
  return { rows, entries };
}

async function expectBalanceNeverNegative() {
  const b = (await ledger.getBalance(t.db, account))!;
  expect(b.balanceNano).toBeGreaterThanOrEqual(0);
  const min = await t.db.query<{ m: number }>('SELECT min(balance_after_nano)::int8 AS m FROM ai_credit_ledger WHERE account = $1', [account]);
  expect(Number(min[0].m)).toBeGreaterThanOrEqual(0);
  const c = await credits();
  expect(c.balanceUsd).toBeGreaterThanOrEqual(0);
  expect(c.reservedUsd).toBe(0);
}

beforeEach(async () => {
  await setBalance(1);
});
afterEach(async () => {
  inFlight?.release();
  await inFlight?.answers;
  inFlight = undefined;
});

describe('credits taken while AI requests are in flight', () => {
  it('a negative grant takes only what is free, says so when it asks for more, and every request still settles', async () => {
    const n = 8;
    const { answers, release } = await requestsInFlight(n);
    // $1 less eight deposits of $0.05.
    expect(await credits()).toEqual(expect.objectContaining({ balanceUsd: 0.6, reservedUsd: 0.4 }));

    // Asking for everything the balance row holds: refused whole, with what is free and what is held.
    const refused = await cli(['credits', 'grant', '--workspace', t.workspaceId, '--usd', '-1']);
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    const why = JSON.parse(refused.stdout).error as string;
    expect(why).toMatch(/below zero/);
    expect(why).toContain('$0.400000 more is reserved by AI requests in flight');
    expect(why).toContain('take at most $0.600000');
    expect(await credits()).toEqual(expect.objectContaining({ balanceUsd: 0.6, reservedUsd: 0.4 }));

    // Taking exactly what is free works, and the answer shows what is left and what is held.
    const taken = await cli(['credits', 'grant', '--workspace', t.workspaceId, '--usd', '-0.6', '--note', 'refund']);
    expect(taken.code, taken.stdout + taken.stderr).toBe(0);
    expect(JSON.parse(taken.stdout)).toEqual({ account, grantedUsd: -0.6, balanceUsd: 0, reservedUsd: 0.4 });

    release();
    const results = await answers;
    for (const r of results) expect(r.status, r.text).toBe(200);
    const { entries } = await expectEveryRequestRecorded(n);
    // Nothing was short: each request was charged its whole cost.
    expect(entries.filter((e) => e.kind === 'overage')).toEqual([]);
    await expectBalanceNeverNegative();
    const left = (await ledger.getBalance(t.db, account))!.balanceNano;
    expect(left).toBe(ledger.usdToNano(0.4) - n * COST_NANO);
  });

  it('a balance lowered under the deposits in flight some other way: every request settles, charged what is left', async () => {
    const n = 6;
    const { answers, release } = await requestsInFlight(n);
    // What an operator's SQL (or an older server) could do: the balance row set below what is held.
    await t.db.query('UPDATE ai_credit_balances SET balance_nano = $2::bigint WHERE account = $1', [account, 2 * COST_NANO + COST_NANO / 2]);
    release();
    const results = await answers;
    for (const r of results) expect(r.status, r.text).toBe(200);
    const { rows, entries } = await expectEveryRequestRecorded(n);
    await expectBalanceNeverNegative();
    if (dbMode() === 'pglite') {
      // The balance row still counted the deposits: it held 2.5 requests' costs, so 2 were charged in full,
      // one in half and the rest nothing; what was not charged is an overage entry saying why.
      const charged = rows.map((r) => Number(r.cost_nano)).sort((a, b) => b - a);
      expect(charged).toEqual([COST_NANO, COST_NANO, COST_NANO / 2, 0, 0, 0]);
      const short = entries.filter((e) => e.kind === 'overage');
      expect(short).toHaveLength(4);
      expect((await ledger.getBalance(t.db, account))!.balanceNano).toBe(0);
      const notes = await t.db.query<{ note: string }>(`SELECT note FROM ai_credit_ledger WHERE account = $1 AND kind = 'overage'`, [account]);
      for (const { note } of notes) expect(note).toMatch(/balance was lowered/);
    } else {
      // With PostgreSQL the deposits were taken out of the balance row when reserved: each settles in full.
      for (const r of rows) expect(Number(r.cost_nano)).toBe(COST_NANO);
    }
  });
});
