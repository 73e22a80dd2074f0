import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ASYNC_COMMIT, ASYNC_COMMIT_NAME } from '../../src/db/async-commit.js';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { releaseCharges, reserveCharges } from '../../src/limits/usage-totals.js';
import * as deliveries from '../../src/webhooks/store.js';
import { dbMode, freshDatabase } from '../support/harness.js';

/**
 * Statements that commit without waiting for the disk (src/db/async-commit.ts; docs/architecture.md,
 * "Commits that wait, and commits that need not"): admission's reservations and releases, webhook delivery claims, their stored answers
 * and their releases. Each leaves `synchronous_commit` as it found it for the next statement, and on the
 * embedded database syncs nothing, where an ordinary commit syncs its write-ahead log.
 */
let db: Database | undefined;
afterEach(async () => {
  await db?.close();
  db = undefined;
});

const synchronousCommit = async (d: Database) =>
  (await d.query<{ v: string }>("SELECT current_setting('synchronous_commit') AS v"))[0]?.v;
const syncs = async (d: Database) => (await d.activity?.())?.fileSyncs ?? 0;

/** Every statement that commits without waiting, run once each against `d`. */
async function eachAsyncStatement(d: Database): Promise<void> {
  const period = '2026-11-01';
  const tokens = [randomUUID(), randomUUID()];
  const reserved = await reserveCharges(d, {
    account: 'workspace:async-commit', period, amountUsd: 0.005, capUsd: 100, tokens, usageKeys: ['run:a', null],
    now: new Date(), expiresAt: new Date(Date.now() + 60_000),
  });
  expect(reserved.granted).toBe(2);
  await releaseCharges(d, tokens);

  const claim = { workspaceId: randomUUID(), key: 'delivery-1', workflowId: randomUUID(), token: 'token-1', leaseMs: 60_000, retentionMs: 86_400_000 };
  expect(await deliveries.claimDelivery(d, claim)).toMatchObject({ takeover: false });
  expect(await deliveries.answerDelivery(d, claim.workspaceId, claim.key, claim.token, { status: 202, headers: {}, body: '' }, 'exec-1')).toBe(true);
  expect(await deliveries.claimDelivery(d, { ...claim, key: 'delivery-2', token: 'token-2' })).toMatchObject({ takeover: false });
  await deliveries.releaseDelivery(d, claim.workspaceId, 'delivery-2', 'token-2');
}

describe('statements that commit without waiting for the disk', () => {
  it('leave synchronous_commit on for the statements after them, and their writes are there', async () => {
    const { dataDir, databaseUrl } = await freshDatabase();
    db = await connectDatabase({ dataDir: dataDir ?? '', databaseUrl });
    expect(await synchronousCommit(db)).toBe('on');
    const rows = await db.query<{ v: string }>(`WITH ${ASYNC_COMMIT} SELECT current_setting('synchronous_commit') AS v FROM ${ASYNC_COMMIT_NAME}`);
    // Off inside the statement that asks for it, on again for the next one on the same connection.
    expect(rows).toEqual([{ v: 'off' }]);
    expect(await synchronousCommit(db)).toBe('on');
    await eachAsyncStatement(db);
    expect(await synchronousCommit(db)).toBe('on');
    const claimed = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE delivery_key = 'delivery-1' AND answer IS NOT NULL");
    expect(claimed).toEqual([{ n: 1 }]);
  });

  it.skipIf(dbMode() !== 'pglite')('sync nothing on the embedded database, where an ordinary commit syncs', async () => {
    const dataDir = (await freshDatabase()).dataDir ?? '';
    db = await connectDatabase({ dataDir });
    await db.exec('CREATE TABLE async_commit_probe (n int)');
    let before = await syncs(db);
    await db.query('INSERT INTO async_commit_probe VALUES ($1)', [1]);
    expect(await syncs(db) - before).toBeGreaterThanOrEqual(1);

    before = await syncs(db);
    await eachAsyncStatement(db);
    expect(await syncs(db) - before).toBe(0);

    // An ordinary commit after them, then a reopen: every write is there.
    await db.query('INSERT INTO async_commit_probe VALUES ($1)', [2]);
    await db.close();
    db = await connectDatabase({ dataDir });
    expect(await db.query("SELECT delivery_key, execution_id FROM webhook_deliveries")).toEqual([{ delivery_key: 'delivery-1', execution_id: 'exec-1' }]);
    expect(await db.query('SELECT n FROM async_commit_probe ORDER BY n')).toEqual([{ n: 1 }, { n: 2 }]);
  });
});
