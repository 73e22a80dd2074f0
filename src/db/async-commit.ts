/**
 * Commits that do not wait for the disk (docs/architecture.md, "Commits that wait, and commits that need not").
 *
 * `ASYNC_COMMIT` is a common table expression that turns `synchronous_commit` off for the statement's own
 * transaction: its commit returns without flushing the write-ahead log. It is for a statement run alone
 * (autocommit) whose loss in a crash costs nothing a client was told: a reservation, a claim, a stored copy
 * of an answer that can be computed again. The write-ahead log is flushed in order, so the next commit that
 * does wait (the one before a client is told anything) makes this one durable too. The setting ends with the
 * transaction (`set_config(..., true)`), so it never reaches another statement on a shared connection; inside
 * a transaction that must be durable it must not be used, since it applies to that whole transaction.
 *
 * The statement must read `ASYNC_COMMIT_NAME` (a cross join with its one row), or PostgreSQL never runs it.
 */
export const ASYNC_COMMIT_NAME = 'async_commit';

export const ASYNC_COMMIT = `${ASYNC_COMMIT_NAME} AS (SELECT set_config('synchronous_commit', 'off', true) AS v)`;
