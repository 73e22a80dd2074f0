import { afterAll, beforeAll, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { otherWorkspace, uniqueName } from '../tables/helpers.js';

// Concurrent writes that grow a workspace's storage (docs/architecture.md, Where limits are enforced). Rows of
// different tables update different counters, so on PostgreSQL two such writes each summed the workspace's bytes
// without the other's and both committed: a burst of writes stored several times the plan's limit. The check now
// holds a lock per workspace until the write commits. Embedded, transactions run one at a time; the test runs on
// both databases and fails only on PostgreSQL without the lock.

const LIMIT = 40_000;
const ROW_CHARS = 6_000;
const TABLES = 12;
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_PLAN_LIMITS: JSON.stringify({ pro: { storageBytes: LIMIT, apiPerMinute: 1_000_000 } }) } });
});
afterAll(async () => {
  await t?.close();
});

it('a burst of growing writes to different tables never takes a workspace past its storage limit', async () => {
  for (let round = 0; round < 3; round++) {
    const ws = await otherWorkspace(t, 'pro');
    const tables = await Promise.all(Array.from({ length: TABLES }, () => ws.createTable(uniqueName('race'), [{ name: 'a', type: 'string' }])));
    const answers = await Promise.all(tables.map((id, i) => ws.insert(id, { a: String(i % 10).repeat(ROW_CHARS) })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 403), statuses.join(',')).toBe(true);
    for (const r of answers.filter((a) => a.status === 403)) expect(r.body.error?.code ?? r.body.code, r.text).toBe('STORAGE_LIMIT_EXCEEDED');
    // Some fit and some do not: the limit holds about six of these rows.
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 403).length).toBeGreaterThan(0);

    const usage = await request(`${t.url}/api/users/me/usage-limits`, 'GET', undefined, { 'x-api-key': ws.key });
    expect(usage.status, usage.text).toBe(200);
    expect(usage.body.storage.usedBytes).toBeLessThanOrEqual(LIMIT);
  }
});
