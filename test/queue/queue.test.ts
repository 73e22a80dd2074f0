import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { BullMqQueue } from '../../src/queue/bullmq.js';
import { InProcessQueue } from '../../src/queue/in-process.js';
import { PostgresQueue } from '../../src/queue/postgres.js';
import { postgresTemplateName, postgresUrlFor, testDatabaseName } from '../support/templates.js';
import { queueConformance } from './conformance.js';

queueConformance('in-process', (concurrency) => new InProcessQueue(concurrency), undefined, { reserves: true });

const redis = process.env.TEST_REDIS_URL;
queueConformance('BullMQ', (concurrency) => new BullMqQueue(redis!, concurrency, `weft-test-${randomBytes(4).toString('hex')}`), redis ? undefined : 'needs TEST_REDIS_URL');

// Dispatch through PostgreSQL alone (needs TEST_DATABASE_URL): a copy of the migrated template, one
// queue name per queue so the suite's queues never see each other's rows.
const pgBase = process.env.TEST_DATABASE_URL;
if (!pgBase) queueConformance('PostgreSQL', () => { throw new Error('not run'); }, 'needs TEST_DATABASE_URL');
if (pgBase) {
  let db: Database;
  let databaseUrl = '';
  beforeAll(async () => {
    const admin = await connectDatabase({ databaseUrl: pgBase, dataDir: '' });
    const name = testDatabaseName('q');
    await admin.exec(`CREATE DATABASE ${name} TEMPLATE ${postgresTemplateName()}`);
    await admin.close();
    databaseUrl = postgresUrlFor(pgBase, name);
    db = await connectDatabase({ databaseUrl, dataDir: '' });
  });
  afterAll(() => db?.close());
  // Called inside the tests, after beforeAll.
  queueConformance('PostgreSQL', (concurrency) => new PostgresQueue({
    db, databaseUrl, concurrency, name: `t-${randomBytes(4).toString('hex')}`,
  }));

  describe('PostgreSQL queue specifics', () => {
    it('delivers again a job whose claim expired (its holder died), and reconnects its LISTEN connection when it is cut', async () => {
      const name = `t-${randomBytes(4).toString('hex')}`;
      // A dispatch claimed by a process that died: its claim lapsed and nobody renews it.
      await db.query("INSERT INTO job_queue (queue, job_id, dispatch, claimed_until) VALUES ($1, 'orphan', 0, now() - interval '1 second')", [name]);
      const q = new PostgresQueue({ db, databaseUrl, concurrency: 2, name, claimMs: 300 });
      const seen: string[] = [];
      let got!: () => void;
      let next = new Promise<void>((r) => (got = r));
      q.work(async (id) => {
        seen.push(id);
        got();
      });
      await next;
      expect(seen).toEqual(['orphan']);
      // Cut the LISTEN connection; a new one appears and jobs keep coming.
      const listeners = async () => (await db.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'weft-queue' AND query LIKE 'LISTEN%'")).map((r) => r.pid);
      for (let i = 0; i < 100 && (await listeners()).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      const [old] = await listeners();
      expect(old).toBeTypeOf('number');
      await db.query('SELECT pg_terminate_backend($1)', [old]);
      let now: number[] = [];
      for (let i = 0; i < 200; i++) {
        now = await listeners();
        if (now.length === 1 && now[0] !== old) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(now).toHaveLength(1);
      expect(now[0]).not.toBe(old);
      next = new Promise<void>((r) => (got = r));
      await q.enqueue('after-reconnect');
      await next;
      await q.close(1000);
      expect(seen).toEqual(['orphan', 'after-reconnect']);
      expect(await db.query('SELECT 1 FROM job_queue WHERE queue = $1', [name])).toEqual([]);
    }, 30_000);
  });
}
