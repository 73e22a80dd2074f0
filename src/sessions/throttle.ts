import type { Database } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import * as store from './store.js';

/**
 * Sign-in attempts are limited within a window per email from one client address, per email from all
 * addresses (a higher ceiling), and per address. An attempt takes its place in each window before any
 * password is checked, atomically (so concurrent guesses cannot all slip in while earlier ones are still
 * being checked): a wrong password keeps it as a failure, a right one gives it back. Past a limit, sign-in
 * answers 429 with Retry-After until the window closes. Unknown emails are counted like known ones, so the
 * answers tell nothing about which exist. A success clears the failures of its email from its address.
 *
 * Why per address first: counted per email alone, five wrong guesses from anywhere locked the account's owner
 * out too, right password and all, and anyone could do that to any account (an audit kept the admin out this
 * way). Now guesses from one address lock out that address only; locking the owner out takes guesses from
 * more addresses than an attacker usually has (FAILURES_PER_EMAIL_ALL / FAILURES_PER_EMAIL), and each guess
 * still costs a password check.
 */
export const LOGIN_WINDOW_MS = 15 * 60_000;
/** Failures for one email from one address. */
export const FAILURES_PER_EMAIL = 5;
/** Failures for one email from all addresses: guessing spread over many addresses stays bounded. */
export const FAILURES_PER_EMAIL_ALL = 100;
/** Higher: many people may share an address (an office, a proxy not trusted with X-Forwarded-For). */
export const FAILURES_PER_ADDRESS = 50;

const normal = (email: string) => email.trim().toLowerCase();
const pairKey = (email: string, ip: string) => `email-ip:${normal(email)}\n${ip}`;
const emailKey = (email: string) => `email:${normal(email)}`;
const addressKey = (ip: string) => `ip:${ip}`;

/** One attempt holding its places; exactly one of its methods is called, once the password was checked. */
export interface SignInAttempt {
  /** The password was wrong: the places stay taken, as failures. */
  failed(): Promise<void>;
  /** The password was right: the email's failures from this address are cleared, its other places given back. */
  succeeded(): Promise<void>;
  /** No answer about the password (an error on the way, or a check that is not a sign-in): both places are given back. */
  release(): Promise<void>;
}

export class LoginThrottle {
  private lastPurge = 0;

  constructor(private readonly db: Database) {}

  /** Takes a place for the email and the address, or throws 429 when either window is full. */
  async begin(email: string, ip: string): Promise<SignInAttempt> {
    const keys = [
      { key: pairKey(email, ip), limit: FAILURES_PER_EMAIL },
      { key: emailKey(email), limit: FAILURES_PER_EMAIL_ALL },
      { key: addressKey(ip), limit: FAILURES_PER_ADDRESS },
    ];
    // One transaction: places taken are given back when a later window has none left. Every attempt locks its
    // rows in the same order (pair, email, address), so two attempts never wait on each other in a cycle.
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
        await giveBack(keys[2]!.key);
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
