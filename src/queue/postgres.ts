import type pg from 'pg';
import type { Database } from '../db/database.js';
import type { JobQueue } from './port.js';

/** One NOTIFY channel for every queue in the database; the payload names the queue. */
const CHANNEL = 'weft_job_queue';

export interface PostgresQueueOptions {
  /** The process's pool: enqueues, claims, claim renewals and deletes go through it. */
  db: Database;
  /** The same database, for the one dedicated LISTEN connection a working queue holds. */
  databaseUrl: string;
  /** Jobs running at once in this process. */
  concurrency: number;
  /** Queues sharing one table stay apart by name (tests); default `jobs`. */
  name?: string;
  /** Fallback poll for notifications lost while the LISTEN connection was down; default 1 s. */
  pollMs?: number;
  /** A running job's claim lasts this long and is renewed every third of it; default 30 s. */
  claimMs?: number;
  /** A handler that threw (the queue does not retry it). */
  onError?: (err: unknown, jobId: string) => void;
  /** Trouble of the queue's own (lost LISTEN connection, failed claim): retried by itself. */
  log?: { warn: (obj: object, msg: string) => void };
}

interface Claimed { job_id: string; dispatch: number; enqueued_at: Date }
interface Running { jobId: string; dispatch: number; done: Promise<void> }

/**
 * Dispatch through PostgreSQL alone, for several processes sharing a database without Redis. A row
 * of `job_queue` is one pending dispatch: enqueue inserts it (a pending duplicate conflicts and is
 * dropped) and NOTIFYs; working processes hold one LISTEN connection each and, when woken, claim
 * the oldest waiting rows with `FOR UPDATE SKIP LOCKED` (no two processes take the same row, none
 * waits for another), up to their free slots. A claim is a lease renewed while the handler runs; the
 * row is deleted when it returns, so the same dispatch can be enqueued again. A process that dies
 * leaves its claims to expire: the rows are released and delivered again (harmless: the worker
 * leases the durable row before running). A fallback poll covers notifications lost while the
 * LISTEN connection was down; it reconnects by itself.
 */
export class PostgresQueue implements JobQueue {
  private readonly db: Database;
  private readonly name: string;
  private readonly pollMs: number;
  private readonly claimMs: number;
  private readonly onError: (err: unknown, jobId: string) => void;
  private handler?: (jobId: string) => Promise<void>;
  private closed = false;
  private readonly running = new Set<Running>();
  /** The claim statement in flight, if any: one at a time per process. */
  private claiming?: Promise<void>;
  /** Work may be waiting that the last claim did not take (a wake-up while claiming or full, a full batch). */
  private again = false;
  private listener?: pg.Client;
  private listenFailures = 0;
  private pollTimer?: NodeJS.Timeout;
  private renewTimer?: NodeJS.Timeout;
  private reconnectTimer?: NodeJS.Timeout;

  constructor(private readonly opts: PostgresQueueOptions) {
    this.db = opts.db;
    this.name = opts.name ?? 'jobs';
    this.pollMs = opts.pollMs ?? 1_000;
    this.claimMs = opts.claimMs ?? 30_000;
    this.onError = opts.onError ?? (() => undefined);
  }

  async enqueue(jobId: string, dispatch = 0): Promise<void> {
    if (this.closed) return;
    // One statement: the row and, only when it is new, the wake-up (sent when it commits).
    await this.db.query(
      `WITH added AS (INSERT INTO job_queue (queue, job_id, dispatch) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1)
       SELECT pg_notify('${CHANNEL}', $1) FROM added`,
      [this.name, jobId, dispatch],
    );
  }

  work(handler: (jobId: string) => Promise<void>): void {
    if (this.handler || this.closed) return;
    this.handler = handler;
    void this.listen();
    this.pollTimer = setInterval(() => this.wake(), this.pollMs);
    // Renew this process's claims; release claims whose holder died (their rows are delivered again).
    this.renewTimer = setInterval(() => {
      this.renew().catch((err: unknown) => this.warn(err, 'renewing job claims failed'));
      if (!this.closed) this.releaseExpired().catch((err: unknown) => this.warn(err, 'releasing expired job claims failed'));
    }, Math.max(50, Math.floor(this.claimMs / 3)));
    this.wake();
  }

  /** Claims what fits in the free slots; one claim at a time, repeated while more may be waiting. */
  private wake(): void {
    if (this.closed || !this.handler) return;
    const free = this.opts.concurrency - this.running.size;
    if (this.claiming || free <= 0) {
      this.again = true;
      return;
    }
    this.again = false;
    this.claiming = this.claim(free).then(
      (full) => {
        this.claiming = undefined;
        if (this.closed) this.stopWhenIdle();
        else if (full || this.again) this.wake();
      },
      (err: unknown) => {
        // The poll tries again; no tight loop while the database is away.
        this.claiming = undefined;
        this.again = false;
        if (this.closed) this.stopWhenIdle();
        else this.warn(err, 'claiming jobs failed');
      },
    );
  }

  /** Takes up to `n` waiting rows; true when it got all it asked for (more may be waiting). */
  private async claim(n: number): Promise<boolean> {
    const rows = await this.db.query<Claimed>(
      `UPDATE job_queue q SET claimed_until = clock_timestamp() + make_interval(secs => $3::float8 / 1000)
       FROM (SELECT job_id, dispatch FROM job_queue WHERE queue = $1 AND claimed_until IS NULL
             ORDER BY enqueued_at LIMIT $2 FOR UPDATE SKIP LOCKED) c
       WHERE q.queue = $1 AND q.job_id = c.job_id AND q.dispatch = c.dispatch
       RETURNING q.job_id, q.dispatch, q.enqueued_at`,
      [this.name, n, this.claimMs],
    );
    if (this.closed) {
      // Closed while claiming: hand the rows back at once for another process.
      await this.release(rows);
      return false;
    }
    rows.sort((a, b) => a.enqueued_at.getTime() - b.enqueued_at.getTime());
    for (const row of rows) this.start(row);
    return rows.length === n;
  }

  private start(row: Claimed): void {
    const handler = this.handler as (jobId: string) => Promise<void>;
    const job: Running = { jobId: row.job_id, dispatch: row.dispatch, done: Promise.resolve() };
    job.done = (async () => {
      try {
        await handler(row.job_id);
      } catch (err) {
        this.onError(err, row.job_id);
      }
      try {
        await this.db.query('DELETE FROM job_queue WHERE queue = $1 AND job_id = $2 AND dispatch = $3', [this.name, row.job_id, row.dispatch]);
      } catch (err) {
        // The claim expires and the row is delivered again, which the durable row makes harmless.
        this.warn(err, 'removing a finished job failed');
      }
    })().finally(() => {
      this.running.delete(job);
      if (this.closed) this.stopWhenIdle();
      else if (this.again) this.wake();
    });
    this.running.add(job);
  }

  private async renew(): Promise<void> {
    if (this.running.size === 0) return;
    const jobs = [...this.running];
    await this.db.query(
      `UPDATE job_queue SET claimed_until = clock_timestamp() + make_interval(secs => $4::float8 / 1000)
       WHERE queue = $1 AND (job_id, dispatch) IN (SELECT * FROM unnest($2::text[], $3::int[]))`,
      [this.name, jobs.map((j) => j.jobId), jobs.map((j) => j.dispatch), this.claimMs],
    );
  }

  private async releaseExpired(): Promise<void> {
    const rows = await this.db.query<{ n: number }>(
      `WITH freed AS (UPDATE job_queue SET claimed_until = NULL WHERE queue = $1 AND claimed_until < clock_timestamp() RETURNING 1)
       SELECT count(*)::int AS n FROM freed`,
      [this.name],
    );
    if ((rows[0]?.n ?? 0) > 0) this.wake();
  }

  private async release(rows: Claimed[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `WITH freed AS (UPDATE job_queue SET claimed_until = NULL
                      WHERE queue = $1 AND (job_id, dispatch) IN (SELECT * FROM unnest($2::text[], $3::int[])) RETURNING 1)
       SELECT pg_notify('${CHANNEL}', $1) FROM freed LIMIT 1`,
      [this.name, rows.map((r) => r.job_id), rows.map((r) => r.dispatch)],
    ).catch((err: unknown) => this.warn(err, 'handing back claimed jobs failed')); // they expire instead
  }

  /** Holds one LISTEN connection while working; on loss, reconnects with backoff (the poll covers the gap). */
  private async listen(): Promise<void> {
    if (this.closed) return;
    const pgm = (await import('pg')).default;
    const client = new pgm.Client({ connectionString: this.opts.databaseUrl, application_name: 'weft-queue' });
    let lost = false;
    const onLost = (err?: unknown) => {
      if (lost) return;
      lost = true;
      if (this.listener === client) this.listener = undefined;
      client.end().catch(() => undefined);
      if (this.closed) return;
      if (err) this.warn(err, 'job queue LISTEN connection lost; reconnecting');
      const delay = Math.min(5_000, 250 * 2 ** this.listenFailures++);
      this.reconnectTimer = setTimeout(() => void this.listen(), delay);
    };
    client.on('error', (err) => onLost(err));
    client.on('end', () => onLost(new Error('connection ended')));
    client.on('notification', (msg) => {
      if (msg.payload === this.name) this.wake();
    });
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      onLost(err);
      return;
    }
    if (this.closed) {
      lost = true;
      await client.end().catch(() => undefined);
      return;
    }
    this.listenFailures = 0;
    this.wake(); // notifications sent while it was down were missed
  }

  /** After close, once nothing runs: the renewals stop (the pool belongs to the process). */
  private stopWhenIdle(): void {
    if (this.running.size === 0 && !this.claiming) clearInterval(this.renewTimer);
  }

  private warn(err: unknown, msg: string): void {
    this.opts.log?.warn({ err }, msg);
  }

  /** Stops claiming at once; every call waits again (up to its grace) for the jobs still running. */
  async close(graceMs = 10_000): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      clearInterval(this.pollTimer);
      clearTimeout(this.reconnectTimer);
      // Its 'end' and 'error' handlers see `closed` and do not reconnect.
      this.listener?.end().catch(() => undefined);
      this.listener = undefined;
      this.stopWhenIdle();
    }
    const pending = [...[...this.running].map((j) => j.done), ...(this.claiming ? [this.claiming] : [])];
    if (pending.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(pending),
      new Promise((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
