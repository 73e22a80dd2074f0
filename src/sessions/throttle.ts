import type { Database } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import * as store from './store.js';

/**
 * Sign-in attempts are limited per email and per client address within a window. An attempt takes its
 * place in both windows before any password is checked, atomically (so concurrent guesses cannot all
 * slip in while earlier ones are still being checked): a wrong password keeps it as a failure, a right
 * one gives it back. Past a limit, sign-in answers 429 with Retry-After until the window closes. Unknown
 * emails are counted like known ones, so the answers tell nothing about which exist. A success clears
 * the email's count (not the address's: one address guessing many accounts stays limited).
 */
export const LOGIN_WINDOW_MS = 15 * 60_000;
export const FAILURES_PER_EMAIL = 5;
/** Higher: many people may share an address (an office, a proxy not trusted with X-Forwarded-For). */
export const FAILURES_PER_ADDRESS = 50;

const emailKey = (email: string) => `email:${email.trim().toLowerCase()}`;
const addressKey = (ip: string) => `ip:${ip}`;

/** One attempt holding its places; exactly one of its methods is called, once the password was checked. */
export interface SignInAttempt {
  /** The password was wrong: the places stay taken, as failures. */
  failed(): Promise<void>;
  /** The password was right: the email's failures are cleared and the address's place is given back. */
  succeeded(): Promise<void>;
  /** No answer about the password (an error on the way, or a check that is not a sign-in): both places are given back. */
  release(): Promise<void>;
}

export class LoginThrottle {
  private lastPurge = 0;

  constructor(private readonly db: Database) {}

  /** Takes a place for the email and the address, or throws 429 when either window is full. */
  async begin(email: string, ip: string): Promise<SignInAttempt> {
    const keys = [{ key: emailKey(email), limit: FAILURES_PER_EMAIL }, { key: addressKey(ip), limit: FAILURES_PER_ADDRESS }];
    // One transaction: a place taken for the email is given back when the address has none left.
    // Every attempt locks the email row before the address row, so two attempts never wait on each other in a cycle.
    await this.db.tx(async (q) => {
      for (const { key, limit } of keys) {
        if (await store.takeAttempt(q, key, limit, LOGIN_WINDOW_MS)) continue;
        throw tooManyAttempts(await store.windowLeftMs(q, key, LOGIN_WINDOW_MS));
      }
    });
    const giveBack = (key: string) => store.releaseAttempt(this.db, key);
    return {
      failed: () => this.purgeNowAndThen(),
      succeeded: async () => {
        await store.clearFailures(this.db, keys[0]!.key);
        await giveBack(keys[1]!.key);
      },
      release: async () => {
        for (const { key } of keys) await giveBack(key);
      },
    };
  }

  private async purgeNowAndThen(): Promise<void> {
    if (Date.now() - this.lastPurge <= LOGIN_WINDOW_MS) return;
    this.lastPurge = Date.now();
    await store.purgeOldFailures(this.db, LOGIN_WINDOW_MS);
  }
}

function tooManyAttempts(waitMs: number): HttpError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  const minutes = Math.ceil(seconds / 60);
  return new HttpError(429, `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
    { retryAfterSeconds: seconds }, { 'retry-after': String(seconds) });
}
