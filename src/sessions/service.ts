import { createHash, randomBytes } from 'node:crypto';
import type { Role } from '../accounts/service.js';
import type { Database } from '../db/database.js';
import type { AuthContext } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { newId } from '../ids.js';
import { generatePassword, MAX_PASSWORD_LENGTH, scryptPasswords, type PasswordHasher } from './password.js';
import * as store from './store.js';
import { LoginThrottle } from './throttle.js';

/** What the sessions area needs of accounts (the accounts service provides it). */
export interface SessionAccounts {
  workspacesOfUser(userId: string): Promise<{ id: string; name: string; role: Role }[]>;
}

export interface SessionOptions {
  /** A session unused this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in. */
  maxMs: number;
  /** How long a positive session lookup is reused (sign-outs in other processes bite within it). */
  cacheMs: number;
  /** Hashing and checking passwords (scrypt unless a test counts the checks). */
  passwords?: PasswordHasher;
}

export interface PublicUser { id: string; email: string; name: string }

export interface SignedIn {
  /** The cookie's value: shown to the browser once, stored only as its SHA-256. */
  token: string;
  sessionId: string;
  csrfToken: string;
  user: PublicUser;
  mustChangePassword: boolean;
}

/** The caller behind a session cookie: acts as the user, like the user's personal key. */
export interface SessionCaller {
  auth: AuthContext;
  sessionId: string;
  csrfToken: string;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');
/** Touches (last seen, sliding expiry) are written at most this often per session. */
const TOUCH_EVERY_MS = 60_000;
const PURGE_EVERY_MS = 3_600_000;

/** Sign-in with email and password, browser sessions, CSRF tokens, password changes. */
export class SessionService {
  private readonly throttle: LoginThrottle;
  private readonly cache = new Map<string, { caller: SessionCaller; until: number; expiresAt: number; touchedAt: number }>();
  private readonly passwords: PasswordHasher;
  private lastPurge = 0;

  constructor(private readonly db: Database, private readonly accounts: SessionAccounts, private readonly opts: SessionOptions) {
    this.throttle = new LoginThrottle(db);
    this.passwords = opts.passwords ?? scryptPasswords;
  }

  /** Cookie lifetime: the most a session can live; the server ends it earlier when idle. */
  get maxAgeSeconds(): number {
    return Math.floor(this.opts.maxMs / 1000);
  }

  /**
   * Checks an email and password. Every refusal is the same 401 and takes about as long (an unknown
   * email or a user without a password still costs one scrypt), so neither tells which emails exist.
   * The attempt takes its place under the failure limits before the password is checked (throttle.ts).
   */
  async signIn(email: string, password: string, clientIp: string): Promise<SignedIn> {
    const attempt = await this.throttle.begin(email, clientIp);
    let user: store.Credentials | undefined;
    let ok: boolean;
    try {
      user = email.length <= 254 ? await store.findCredentialsByEmail(this.db, email.trim()) : undefined;
      ok = user?.password_hash && password.length <= MAX_PASSWORD_LENGTH
        ? await this.passwords.verify(password, user.password_hash)
        : await this.passwords.verifyNothing(password.slice(0, MAX_PASSWORD_LENGTH));
    } catch (err) {
      await attempt.release().catch(() => undefined);
      throw err;
    }
    if (!ok || !user) {
      await attempt.failed();
      throw new HttpError(401, 'Invalid email or password');
    }
    await attempt.succeeded();
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const row = await store.insertSession(this.db, {
      id: newId(), tokenHash: hashToken(token), userId: user.id, csrfToken, expiresInMs: Math.min(this.opts.idleMs, this.opts.maxMs),
    });
    if (Date.now() - this.lastPurge > PURGE_EVERY_MS) {
      this.lastPurge = Date.now();
      await store.purgeExpiredSessions(this.db);
    }
    return {
      token, sessionId: row.id, csrfToken,
      user: { id: user.id, email: user.email, name: user.name }, mustChangePassword: user.must_change_password,
    };
  }

  /** The caller behind a session cookie's token, or undefined when it is unknown, signed out or expired. */
  authenticate = async (token: string): Promise<SessionCaller | undefined> => {
    if (token.length < 20 || token.length > 100) return undefined;
    const hash = hashToken(token);
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now && hit.expiresAt > now) {
      this.touch(hit.caller.sessionId, hit, now);
      return hit.caller;
    }
    if (hit) this.cache.delete(hash);
    const row = await store.findLiveSession(this.db, hash);
    if (!row) return undefined;
    const caller: SessionCaller = {
      auth: { keyId: row.id, keyType: 'personal', userId: row.user_id, keyWorkspaceId: null, via: 'session' },
      sessionId: row.id,
      csrfToken: row.csrf_token,
    };
    const entry = { caller, until: now + this.opts.cacheMs, expiresAt: row.expires_at.getTime(), touchedAt: row.last_seen_at.getTime() };
    if (this.opts.cacheMs > 0) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(hash, entry);
    }
    this.touch(row.id, entry, now);
    return caller;
  };

  private touch(sessionId: string, entry: { touchedAt: number }, now: number): void {
    if (now - entry.touchedAt < TOUCH_EVERY_MS) return;
    entry.touchedAt = now;
    store.touchSession(this.db, sessionId, this.opts.idleMs, this.opts.maxMs).catch(() => undefined);
  }

  /** Drops this process's cached lookups of the given sessions (others forget within `cacheMs`). */
  private forget(sessionIds: string[]): void {
    if (sessionIds.length === 0) return;
    const ids = new Set(sessionIds);
    for (const [hash, entry] of this.cache) if (ids.has(entry.caller.sessionId)) this.cache.delete(hash);
  }

  async signOut(sessionId: string): Promise<void> {
    await store.deleteSession(this.db, sessionId);
    this.forget([sessionId]);
  }

  /** Ends every session of the user, `keep` excepted. */
  async signOutEverywhere(userId: string, keep: string | null = null): Promise<void> {
    this.forget(await store.deleteUserSessions(this.db, userId, keep));
  }

  /** What the dashboard shows of the signed-in user; undefined when the user is gone. */
  async describe(caller: SessionCaller): Promise<{ user: PublicUser; csrfToken: string; mustChangePassword: boolean; workspaces: { id: string; name: string; role: Role }[] } | undefined> {
    const user = await store.findCredentials(this.db, caller.auth.userId);
    if (!user) return undefined;
    const workspaces = await this.accounts.workspacesOfUser(user.id);
    return {
      user: { id: user.id, email: user.email, name: user.name }, csrfToken: caller.csrfToken, mustChangePassword: user.must_change_password, workspaces,
    };
  }

  /**
   * Changes the signed-in user's password after checking the current one (a wrong one counts as a failed
   * sign-in). Clears mustChangePassword; the other sessions of the user end. The same password again is
   * accepted: that is how a one-time password is kept.
   */
  async changePassword(caller: SessionCaller, current: string, next: string, clientIp: string): Promise<void> {
    const user = await store.findCredentials(this.db, caller.auth.userId);
    if (!user) throw new HttpError(401, 'Not signed in');
    const attempt = await this.throttle.begin(user.email, clientIp);
    let ok: boolean;
    try {
      ok = user.password_hash && current.length <= MAX_PASSWORD_LENGTH
        ? await this.passwords.verify(current, user.password_hash)
        : await this.passwords.verifyNothing(current.slice(0, MAX_PASSWORD_LENGTH));
    } catch (err) {
      await attempt.release().catch(() => undefined);
      throw err;
    }
    if (!ok) {
      await attempt.failed();
      throw new HttpError(400, 'currentPassword: the current password is not correct', {
        details: [{ code: 'custom', path: ['currentPassword'], message: 'The current password is not correct' }],
      });
    }
    // Knowing the current password is no failure: its places under the limits are given back.
    await attempt.release();
    await this.replacePassword(user.id, await this.passwords.hash(next), false, caller.sessionId);
  }

  /**
   * The new password and the end of the user's other sessions commit together: a crash between them would
   * leave sessions opened with the old password alive.
   */
  private async replacePassword(userId: string, hash: string, mustChange: boolean, keep: string | null): Promise<boolean> {
    const ended = await this.db.tx(async (q) => {
      if (!(await store.setPassword(q, userId, hash, mustChange))) return undefined;
      return store.deleteUserSessions(q, userId, keep);
    });
    if (ended === undefined) return false;
    this.forget(ended);
    return true;
  }

  /** Sets a user's password (the CLI): `mustChange` for one-time passwords. Ends all the user's sessions. */
  async setPassword(userId: string, password: string, mustChange: boolean): Promise<boolean> {
    return this.replacePassword(userId, await this.passwords.hash(password), mustChange, null);
  }

  /** Generates and sets a one-time password (mustChangePassword); returns it to be shown once. */
  async resetPassword(userId: string): Promise<string | undefined> {
    const password = generatePassword();
    return (await this.setPassword(userId, password, true)) ? password : undefined;
  }

  /**
   * Gives a user without any password a one-time one and returns it; undefined when the user has one
   * already (so it is printed by the setup or first start that created the admin, and never again).
   */
  async claimInitialPassword(userId: string): Promise<string | undefined> {
    if ((await store.findCredentials(this.db, userId))?.password_hash) return undefined; // no scrypt on every start
    const password = generatePassword();
    return (await store.setInitialPassword(this.db, userId, await this.passwords.hash(password))) ? password : undefined;
  }

  /** The id of the user signing in with `email` (case-insensitive), for the CLI. */
  async userIdByEmail(email: string): Promise<string | undefined> {
    return (await store.findCredentialsByEmail(this.db, email.trim()))?.id;
  }
}
