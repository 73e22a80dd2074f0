import type { Database } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import * as store from './store.js';

/**
 * Failed sign-ins are counted per email and per client address within a window; past a limit, sign-in
 * answers 429 with Retry-After until the window closes, before any password is checked. Unknown emails
 * are counted like known ones, so the answers tell nothing about which exist. A success clears the
 * email's count (not the address's: one address guessing many accounts stays limited).
 */
export const LOGIN_WINDOW_MS = 15 * 60_000;
export const FAILURES_PER_EMAIL = 5;
/** Higher: many people may share an address (an office, a proxy not trusted with X-Forwarded-For). */
export const FAILURES_PER_ADDRESS = 50;

const emailKey = (email: string) => `email:${email.trim().toLowerCase()}`;
const addressKey = (ip: string) => `ip:${ip}`;

export class LoginThrottle {
  private lastPurge = 0;

  constructor(private readonly db: Database) {}

  /** Throws 429 when the email or the address used up its failures. */
  async check(email: string, ip: string): Promise<void> {
    const open = await store.openFailureWindows(this.db, [emailKey(email), addressKey(ip)], LOGIN_WINDOW_MS);
    let waitMs = 0;
    for (const w of open) {
      const limit = w.key.startsWith('email:') ? FAILURES_PER_EMAIL : FAILURES_PER_ADDRESS;
      if (w.failures >= limit) waitMs = Math.max(waitMs, w.retry_after_ms);
    }
    if (waitMs > 0) {
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      const minutes = Math.ceil(seconds / 60);
      throw new HttpError(429, `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
        { retryAfterSeconds: seconds }, { 'retry-after': String(seconds) });
    }
  }

  async failed(email: string, ip: string): Promise<void> {
    await store.recordFailure(this.db, emailKey(email), LOGIN_WINDOW_MS);
    await store.recordFailure(this.db, addressKey(ip), LOGIN_WINDOW_MS);
    if (Date.now() - this.lastPurge > LOGIN_WINDOW_MS) {
      this.lastPurge = Date.now();
      await store.purgeOldFailures(this.db, LOGIN_WINDOW_MS);
    }
  }

  async succeeded(email: string): Promise<void> {
    await store.clearFailures(this.db, emailKey(email));
  }
}
