// SQL of the sessions area: sessions, login failures, and the credential columns it added to users
// (password_hash, must_change_password; migration 0017). Users themselves belong to accounts.
import type { Queryable } from '../db/database.js';

export interface Credentials {
  id: string; email: string; name: string; password_hash: string | null; must_change_password: boolean;
}

export interface SessionRow {
  id: string; user_id: string; csrf_token: string; created_at: Date; last_seen_at: Date; expires_at: Date;
}

/** The user signing in with `email`, matched case-insensitively (an exact match wins when several differ only in case). */
export const findCredentialsByEmail = (q: Queryable, email: string) =>
  q.query<Credentials>(
    `SELECT id, email, name, password_hash, must_change_password FROM users
      WHERE lower(email) = lower($1) ORDER BY (email = $1) DESC, created_at LIMIT 1`,
    [email],
  ).then((r) => r[0]);

export const findCredentials = (q: Queryable, userId: string) =>
  q.query<Credentials>('SELECT id, email, name, password_hash, must_change_password FROM users WHERE id = $1', [userId])
    .then((r) => r[0]);

export const setPassword = (q: Queryable, userId: string, hash: string, mustChange: boolean) =>
  q.query<{ id: string }>('UPDATE users SET password_hash = $2, must_change_password = $3 WHERE id = $1 RETURNING id', [userId, hash, mustChange])
    .then((r) => r.length > 0);

/** Sets a password only where none is set yet: one of several processes starting together wins. */
export const setInitialPassword = (q: Queryable, userId: string, hash: string) =>
  q.query<{ id: string }>(
    'UPDATE users SET password_hash = $2, must_change_password = true WHERE id = $1 AND password_hash IS NULL RETURNING id',
    [userId, hash],
  ).then((r) => r.length > 0);

export const insertSession = (q: Queryable, s: { id: string; tokenHash: string; userId: string; csrfToken: string; expiresInMs: number }) =>
  q.query<SessionRow>(
    `INSERT INTO sessions (id, token_hash, user_id, csrf_token, expires_at)
     VALUES ($1, $2, $3, $4, now() + $5::float8 * interval '1 millisecond')
     RETURNING id, user_id, csrf_token, created_at, last_seen_at, expires_at`,
    [s.id, s.tokenHash, s.userId, s.csrfToken, s.expiresInMs],
  ).then((r) => r[0]!);

export const findLiveSession = (q: Queryable, tokenHash: string) =>
  q.query<SessionRow>(
    `SELECT id, user_id, csrf_token, created_at, last_seen_at, expires_at FROM sessions
      WHERE token_hash = $1 AND expires_at > now()`,
    [tokenHash],
  ).then((r) => r[0]);

/** Marks a session used and slides its expiry: `idleMs` from now, never past `maxMs` after sign-in. */
export const touchSession = (q: Queryable, id: string, idleMs: number, maxMs: number) =>
  q.query(
    `UPDATE sessions SET last_seen_at = now(),
            expires_at = LEAST(now() + $2::float8 * interval '1 millisecond', created_at + $3::float8 * interval '1 millisecond')
      WHERE id = $1 AND expires_at > now()`,
    [id, idleMs, maxMs],
  );

export const deleteSession = (q: Queryable, id: string) =>
  q.query<{ id: string }>('DELETE FROM sessions WHERE id = $1 RETURNING id', [id]).then((r) => r.length > 0);

/** Ends every session of a user except `keep` (the one changing its password). Returns the ids ended. */
export const deleteUserSessions = (q: Queryable, userId: string, keep: string | null = null) =>
  q.query<{ id: string }>('DELETE FROM sessions WHERE user_id = $1 AND ($2::uuid IS NULL OR id <> $2::uuid) RETURNING id', [userId, keep])
    .then((r) => r.map((s) => s.id));

/** Drops sessions that expired a day ago or more (kept a day so that "expired" can still be told apart). */
export const purgeExpiredSessions = (q: Queryable) =>
  q.query("DELETE FROM sessions WHERE expires_at < now() - interval '1 day'");

/**
 * Takes one attempt for `key` if its window has room: counts it (a missing or lapsed window starts anew at
 * 1) and returns true; a full window is left as it is and returns false. One statement on the row's lock,
 * so concurrent attempts can never take more than `limit`.
 */
export const takeAttempt = (q: Queryable, key: string, limit: number, windowMs: number) =>
  q.query<{ failures: number }>(
    `INSERT INTO login_failures AS f (key, failures, window_start) VALUES ($1, 1, now())
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN f.window_start <= now() - $2::float8 * interval '1 millisecond' THEN 1 ELSE f.failures + 1 END,
       window_start = CASE WHEN f.window_start <= now() - $2::float8 * interval '1 millisecond' THEN now() ELSE f.window_start END
     WHERE f.window_start <= now() - $2::float8 * interval '1 millisecond' OR f.failures < $3
     RETURNING failures`,
    [key, windowMs, limit],
  ).then((r) => r.length > 0);

/** Time left in the window of `key`, in milliseconds (0 when there is none). */
export const windowLeftMs = (q: Queryable, key: string, windowMs: number) =>
  q.query<{ ms: number }>(
    `SELECT GREATEST(0, EXTRACT(EPOCH FROM (window_start + $2::float8 * interval '1 millisecond' - now())) * 1000)::float8 AS ms
       FROM login_failures WHERE key = $1`,
    [key, windowMs],
  ).then((r) => r[0]?.ms ?? 0);

/** Gives back an attempt taken by takeAttempt that did not fail (a success, or no answer at all). */
export const releaseAttempt = (q: Queryable, key: string) =>
  q.query('UPDATE login_failures SET failures = failures - 1 WHERE key = $1 AND failures > 0', [key]);

export const clearFailures = (q: Queryable, key: string) => q.query('DELETE FROM login_failures WHERE key = $1', [key]);

export const purgeOldFailures = (q: Queryable, windowMs: number) =>
  q.query("DELETE FROM login_failures WHERE window_start < now() - $1::float8 * interval '1 millisecond'", [windowMs]);
