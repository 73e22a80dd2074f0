// Signing in to the dashboard: passwords, the session cookie, signing out, changing the password,
// expiry and the failed-sign-in limit, all over HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scryptHasher, type PasswordHasher } from '../../src/sessions/password.js';
import { createUser } from '../support/accounts.js';
import { withFailingStatements } from '../support/failing-statements.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { asSession, login } from './support.js';

// The lowest cost: these tests count checks, they do not time them.
const scryptPasswords = scryptHasher(10);

/** The real scrypt hasher, counting the password checks the server makes (one per sign-in it answers 401 or 200). */
function countingPasswords(): { hasher: PasswordHasher; checks: { verify: number; verifyNothing: number } } {
  const checks = { verify: 0, verifyNothing: 0 };
  return {
    checks,
    hasher: {
      hash: (p) => scryptPasswords.hash(p),
      verify: (p, stored) => {
        checks.verify++;
        return scryptPasswords.verify(p, stored);
      },
      verifyNothing: (p) => {
        checks.verifyNothing++;
        return scryptPasswords.verifyNothing(p);
      },
    },
  };
}

let t: TestServer;
const passwords = countingPasswords();
const ADMIN_PASSWORD = 'correct horse battery staple';
let adminEmail: string;

beforeAll(async () => {
  t = await startTestServer({ server: { passwords: passwords.hasher } });
  adminEmail = (await t.server.services.accounts.findUser(t.userId))!.email;
  await t.server.services.sessions.setPassword(t.userId, ADMIN_PASSWORD, false);
});
afterAll(async () => {
  await t?.close();
});

async function userWithPassword(email: string, password: string, mustChange = false): Promise<string> {
  const user = await createUser(t.server.ctx.db, email);
  await t.server.services.sessions.setPassword(user.id, password, mustChange);
  return user.id;
}

describe('POST /api/v1/auth/login', () => {
  it('signs in with the right password: the user, a CSRF token, and an HttpOnly SameSite=Lax cookie (not Secure over plain HTTP)', async () => {
    const s = await login(t, adminEmail, ADMIN_PASSWORD);
    expect(s.response.status).toBe(200);
    expect(s.response.body).toEqual({
      user: { id: t.userId, email: adminEmail, name: 'Admin' }, csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/), mustChangePassword: false,
    });
    expect(s.response.headers.get('cache-control')).toBe('no-store');
    expect(s.cookie).toMatch(/^weft_session=[A-Za-z0-9_-]{40,}$/);
    const attrs = s.setCookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attrs).toContain('httponly');
    expect(attrs).toContain('samesite=lax');
    expect(attrs).toContain('path=/');
    expect(attrs.some((a) => a.startsWith('max-age='))).toBe(true);
    expect(attrs).not.toContain('secure');
    // The cookie never carries the CSRF token or anything but the random session token.
    expect(s.cookie).not.toContain(s.csrfToken);
  });

  it('matches the email case-insensitively', async () => {
    const s = await login(t, adminEmail.toUpperCase(), ADMIN_PASSWORD);
    expect(s.response.status).toBe(200);
  });

  it('answers a wrong password and an unknown email with the same 401, each after one password check', async () => {
    await userWithPassword('timing@example.com', 'the right password 1');
    for (let i = 0; i < 2; i++) {
      // A wrong password costs one scrypt against the user's hash...
      const before = { ...passwords.checks };
      const a = await login(t, 'timing@example.com', `wrong password ${i}`);
      expect(passwords.checks).toEqual({ verify: before.verify + 1, verifyNothing: before.verifyNothing });
      // ...and an unknown email the same one scrypt, on a hash nothing matches: not answered at once.
      const b = await login(t, `nobody-${i}@example.com`, 'whatever password');
      expect(passwords.checks).toEqual({ verify: before.verify + 1, verifyNothing: before.verifyNothing + 1 });
      for (const r of [a, b]) {
        expect(r.response.status).toBe(401);
        expect(r.response.body).toEqual({ error: 'Invalid email or password' });
        expect(r.setCookie).toBe('');
      }
    }
  });

  it('refuses a user who has no password (API keys only) with the same 401, after the same one check', async () => {
    await createUser(t.server.ctx.db, 'keys-only@example.com');
    const before = passwords.checks.verifyNothing;
    const s = await login(t, 'keys-only@example.com', 'anything at all here');
    expect(passwords.checks.verifyNothing).toBe(before + 1);
    expect(s.response.status).toBe(401);
    expect(s.response.body).toEqual({ error: 'Invalid email or password' });
  });

  it('answers 400 to a body without email or password, and to non-JSON', async () => {
    for (const body of [{}, { email: 'a@b.c' }, { password: 'x' }, { email: 5, password: 'x' }]) {
      const r = await request(`${t.url}/api/v1/auth/login`, 'POST', body);
      expect(r.status).toBe(400);
      expect(typeof r.body.error).toBe('string');
    }
    const bad = await request(`${t.url}/api/v1/auth/login`, 'POST', '{"email":', { 'content-type': 'application/json' });
    expect(bad.status).toBe(400);
  });

  it('after 5 failures for an email from an address answers that address 429 with Retry-After, even to the right password', async () => {
    await userWithPassword('throttled@example.com', 'throttled password 1');
    for (let i = 0; i < 5; i++) expect((await login(t, 'throttled@example.com', `guess ${i}`)).response.status).toBe(401);
    const refused = await login(t, 'throttled@example.com', 'throttled password 1');
    expect(refused.response.status).toBe(429);
    expect(refused.response.body.error).toMatch(/Too many failed sign-in attempts/);
    const retryAfter = Number(refused.response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(800);
    expect(retryAfter).toBeLessThanOrEqual(900);
    expect(refused.setCookie).toBe('');
    // Other accounts are not affected.
    expect((await login(t, adminEmail, ADMIN_PASSWORD)).response.status).toBe(200);
  });

  it('a success clears the count of failures for that email', async () => {
    await userWithPassword('forgetful@example.com', 'forgetful password');
    for (let i = 0; i < 4; i++) expect((await login(t, 'forgetful@example.com', `guess ${i}`)).response.status).toBe(401);
    expect((await login(t, 'forgetful@example.com', 'forgetful password')).response.status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await login(t, 'forgetful@example.com', `again ${i}`)).response.status).toBe(401);
    expect((await login(t, 'forgetful@example.com', 'forgetful password')).response.status).toBe(200);
  });
});

describe('GET /api/v1/auth/session', () => {
  it('describes the signed-in user with the CSRF token and the workspaces with roles', async () => {
    const s = await login(t, adminEmail, ADMIN_PASSWORD);
    const r = await asSession(t, s, 'GET', '/api/v1/auth/session');
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body).toEqual({
      user: { id: t.userId, email: adminEmail, name: 'Admin' }, csrfToken: s.csrfToken, mustChangePassword: false,
      workspaces: [{ id: t.workspaceId, name: 'default', role: 'admin' }],
    });
  });

  it('is 401 without a cookie, with an unknown one, and with only an API key', async () => {
    expect((await request(`${t.url}/api/v1/auth/session`, 'GET')).status).toBe(401);
    const forged = await request(`${t.url}/api/v1/auth/session`, 'GET', undefined, { cookie: 'weft_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual({ error: 'Not signed in' });
    expect((await t.call('GET', '/api/v1/auth/session')).status).toBe(401);
  });
});

describe('signing out', () => {
  it('logout ends this session and clears the cookie; other sessions go on', async () => {
    const a = await login(t, adminEmail, ADMIN_PASSWORD);
    const b = await login(t, adminEmail, ADMIN_PASSWORD);
    expect((await asSession(t, a, 'GET', '/api/v1/auth/session')).status).toBe(200);
    const out = await asSession(t, a, 'POST', '/api/v1/auth/logout');
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^weft_session=;.*(Max-Age=0|Expires=Thu, 01 Jan 1970)/i);
    expect((await asSession(t, a, 'GET', '/api/v1/auth/session')).status).toBe(401);
    expect((await asSession(t, a, 'GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`)).status).toBe(401);
    expect((await asSession(t, b, 'GET', '/api/v1/auth/session')).status).toBe(200);
  });

  it('logout needs the CSRF token of a live session (a cross-site request cannot sign anyone out)', async () => {
    const a = await login(t, adminEmail, ADMIN_PASSWORD);
    expect((await asSession(t, a, 'POST', '/api/v1/auth/logout', undefined, false)).status).toBe(403);
    expect((await asSession(t, a, 'GET', '/api/v1/auth/session')).status).toBe(200);
    // Without a live session there is nothing to end: 401, and the cookie sent is cleared.
    const none = await request(`${t.url}/api/v1/auth/logout`, 'POST');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: 'Not signed in' });
    expect(none.headers.get('set-cookie')).toMatch(/^weft_session=;/);
    expect((await asSession(t, a, 'POST', '/api/v1/auth/logout')).status).toBe(204);
    expect((await asSession(t, a, 'POST', '/api/v1/auth/logout')).status).toBe(401);
  });

  it('logout-all ends every session of the user and no one else\'s', async () => {
    await userWithPassword('many@example.com', 'many sessions password');
    const sessions = [];
    for (let i = 0; i < 3; i++) sessions.push(await login(t, 'many@example.com', 'many sessions password'));
    const admin = await login(t, adminEmail, ADMIN_PASSWORD);
    expect((await asSession(t, sessions[0]!, 'POST', '/api/v1/auth/logout-all', undefined, false)).status).toBe(403);
    expect((await asSession(t, sessions[1]!, 'GET', '/api/v1/auth/session')).status).toBe(200);
    const out = await asSession(t, sessions[0]!, 'POST', '/api/v1/auth/logout-all');
    expect(out.status).toBe(204);
    for (const s of sessions) expect((await asSession(t, s, 'GET', '/api/v1/auth/session')).status).toBe(401);
    expect((await asSession(t, admin, 'GET', '/api/v1/auth/session')).status).toBe(200);
    expect((await request(`${t.url}/api/v1/auth/logout-all`, 'POST')).status).toBe(401);
  });
});

describe('POST /api/v1/auth/password', () => {
  it('changes a one-time password: mustChangePassword clears, other sessions end, this one goes on', async () => {
    const id = await userWithPassword('onetime@example.com', 'printed-once-pass', true);
    const first = await login(t, 'onetime@example.com', 'printed-once-pass');
    expect(first.response.body.mustChangePassword).toBe(true);
    const other = await login(t, 'onetime@example.com', 'printed-once-pass');
    // The API does not refuse other calls meanwhile (the dashboard asks for the new password).
    expect((await asSession(t, first, 'GET', '/api/v1/auth/session')).body.mustChangePassword).toBe(true);

    const change = { currentPassword: 'printed-once-pass', newPassword: 'my own new password' };
    expect((await asSession(t, first, 'POST', '/api/v1/auth/password', change, false)).status).toBe(403);
    const r = await asSession(t, first, 'POST', '/api/v1/auth/password', change);
    expect(r.status).toBe(204);
    const after = await asSession(t, first, 'GET', '/api/v1/auth/session');
    expect(after.status).toBe(200);
    expect(after.body.mustChangePassword).toBe(false);
    expect(after.body.user.id).toBe(id);
    expect((await asSession(t, other, 'GET', '/api/v1/auth/session')).status).toBe(401);
    expect((await login(t, 'onetime@example.com', 'printed-once-pass')).response.status).toBe(401);
    expect((await login(t, 'onetime@example.com', 'my own new password')).response.status).toBe(200);
  });

  it('changes nothing when the other sessions cannot be ended: the password and the sessions commit together', async () => {
    await userWithPassword('atomic@example.com', 'atomic password 1');
    const first = await login(t, 'atomic@example.com', 'atomic password 1');
    const other = await login(t, 'atomic@example.com', 'atomic password 1');
    // Ending the other sessions fails inside the transaction.
    const r = await withFailingStatements(t.server.ctx.db, (text) => text.startsWith('DELETE FROM sessions WHERE user_id'),
      () => asSession(t, first, 'POST', '/api/v1/auth/password', { currentPassword: 'atomic password 1', newPassword: 'atomic password 2' }));
    expect(r.status).toBe(500);
    expect((await login(t, 'atomic@example.com', 'atomic password 1')).response.status).toBe(200);
    expect((await login(t, 'atomic@example.com', 'atomic password 2')).response.status).toBe(401);
    expect((await asSession(t, other, 'GET', '/api/v1/auth/session')).status).toBe(200);
  });

  it('keeps a one-time password when the new one is the same (it must be 12 characters or more)', async () => {
    await userWithPassword('keeper@example.com', 'keep-this-one-1', true);
    const s = await login(t, 'keeper@example.com', 'keep-this-one-1');
    const r = await asSession(t, s, 'POST', '/api/v1/auth/password', { currentPassword: 'keep-this-one-1', newPassword: 'keep-this-one-1' });
    expect(r.status).toBe(204);
    expect((await login(t, 'keeper@example.com', 'keep-this-one-1')).response.body.mustChangePassword).toBe(false);
  });

  it('refuses a wrong current password (400 on currentPassword), a short or long new one, and a caller without a session', async () => {
    await userWithPassword('changer@example.com', 'changer password 1');
    const s = await login(t, 'changer@example.com', 'changer password 1');
    const wrong = await asSession(t, s, 'POST', '/api/v1/auth/password', { currentPassword: 'not it at all', newPassword: 'another long password' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.details[0].path).toEqual(['currentPassword']);
    const short = await asSession(t, s, 'POST', '/api/v1/auth/password', { currentPassword: 'changer password 1', newPassword: 'short' });
    expect(short.status).toBe(400);
    expect(short.body.error).toMatch(/at least 12 characters/);
    const long = await asSession(t, s, 'POST', '/api/v1/auth/password', { currentPassword: 'changer password 1', newPassword: 'x'.repeat(201) });
    expect(long.status).toBe(400);
    expect((await asSession(t, s, 'POST', '/api/v1/auth/password', { currentPassword: 'changer password 1' })).status).toBe(400);
    // The password did not change.
    expect((await login(t, 'changer@example.com', 'changer password 1')).response.status).toBe(200);
    const anonymous = await request(`${t.url}/api/v1/auth/password`, 'POST', { currentPassword: 'a', newPassword: 'short' });
    expect(anonymous.status).toBe(401);
    // A key is not a session: the password is the signed-in user's to change.
    expect((await t.call('POST', '/api/v1/auth/password', { currentPassword: 'changer password 1', newPassword: 'another long password' })).status).toBe(401);
  });
});

describe('expiry', () => {
  it('an expired session authenticates nothing', async () => {
    const s = await login(t, adminEmail, ADMIN_PASSWORD);
    await t.server.ctx.db.query("UPDATE sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1 AND csrf_token = $2", [t.userId, s.csrfToken]);
    expect((await asSession(t, s, 'GET', '/api/v1/auth/session')).status).toBe(401);
    const api = await asSession(t, s, 'GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`);
    expect(api.status).toBe(401);
    expect(api.body).toEqual({ error: 'API key required' });
  });

  it('stores only a hash of the session token', async () => {
    const s = await login(t, adminEmail, ADMIN_PASSWORD);
    const token = s.cookie.split('=')[1]!;
    const rows = await t.server.ctx.db.query<{ token_hash: string }>('SELECT token_hash FROM sessions WHERE csrf_token = $1', [s.csrfToken]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0]!.token_hash).not.toContain(token);
  });
});

describe('behind a proxy', () => {
  let proxied: TestServer;
  beforeAll(async () => {
    proxied = await startTestServer({ env: { WEFT_TRUST_PROXY: 'true' } });
    await proxied.server.services.sessions.setPassword(proxied.userId, ADMIN_PASSWORD, false);
  });
  afterAll(async () => {
    await proxied?.close();
  });

  it('sets Secure when a trusted proxy says the browser used https, and only then', async () => {
    const viaHttps = await login(proxied, adminEmail, ADMIN_PASSWORD, { 'x-forwarded-proto': 'https' });
    expect(viaHttps.setCookie.split(';').map((a) => a.trim())).toContain('Secure');
    const viaHttp = await login(proxied, adminEmail, ADMIN_PASSWORD);
    expect(viaHttp.setCookie).not.toMatch(/;\s*Secure/i);
    // The server of the other suites trusts no proxy: the header changes nothing there.
    const untrusted = await login(t, adminEmail, ADMIN_PASSWORD, { 'x-forwarded-proto': 'https' });
    expect(untrusted.setCookie).not.toMatch(/;\s*Secure/i);
  });

  it('counts failures per client address: 50 wrong sign-ins from one address, then 429 for any email', async () => {
    const from = { 'x-forwarded-for': '203.0.113.9' };
    for (let i = 0; i < 50; i++) expect((await login(proxied, `guess-${i}@example.com`, 'not a password', from)).response.status).toBe(401);
    const blocked = await login(proxied, adminEmail, ADMIN_PASSWORD, from);
    expect(blocked.response.status).toBe(429);
    expect(Number(blocked.response.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another address still signs in.
    expect((await login(proxied, adminEmail, ADMIN_PASSWORD, { 'x-forwarded-for': '198.51.100.7' })).response.status).toBe(200);
  }, 120_000);
});

// Concurrent guesses: each attempt takes its place under the limits before its password is checked, so
// guesses sent together cannot all be checked while the first ones are still running.
describe('the failed-sign-in limit under concurrency', () => {
  let c: TestServer;
  const counted = countingPasswords();
  const checks = () => counted.checks.verify + counted.checks.verifyNothing;
  beforeAll(async () => {
    c = await startTestServer({ env: { WEFT_TRUST_PROXY: 'true' }, server: { passwords: counted.hasher } });
  });
  afterAll(async () => {
    await c?.close();
  });

  /** Statuses of the answers, counted; every 429 checked for its Retry-After in whole seconds. */
  function tally(answers: Awaited<ReturnType<typeof login>>[]): Record<number, number> {
    const byStatus: Record<number, number> = {};
    for (const a of answers) {
      byStatus[a.response.status] = (byStatus[a.response.status] ?? 0) + 1;
      if (a.response.status === 429) {
        expect(a.response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
        expect(a.response.body.error).toMatch(/Too many failed sign-in attempts/);
        expect(a.setCookie).toBe('');
      }
    }
    return byStatus;
  }

  it('40 wrong passwords for one email at once: 5 are checked (401), the other 35 get 429', async () => {
    const user = await createUser(c.server.ctx.db, 'rushed@example.com');
    await c.server.services.sessions.setPassword(user.id, 'the rushed password', false);
    const before = checks();
    const from = { 'x-forwarded-for': '198.51.100.40' };
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => login(c, 'rushed@example.com', `guess number ${i}`, from)));
    expect(tally(answers)).toEqual({ 401: 5, 429: 35 });
    expect(checks() - before).toBe(5);
    // That address's window for the email is full: even the right password waits there, without a check; from
    // another address the owner signs in (guesses from one address lock out that address only).
    expect((await login(c, 'rushed@example.com', 'the rushed password', from)).response.status).toBe(429);
    expect(checks() - before).toBe(5);
    expect((await login(c, 'rushed@example.com', 'the rushed password', { 'x-forwarded-for': '198.51.100.41' })).response.status).toBe(200);
  }, 60_000);

  it('150 guesses at once from an address with 45 failures: 5 more are checked, 145 get 429', async () => {
    const from = { 'x-forwarded-for': '203.0.113.45' };
    // 45 failures: 9 emails with 5 each (each within its email's limit), sent together.
    const first = await Promise.all(Array.from({ length: 45 }, (_, i) => login(c, `spread-${i % 9}@example.com`, `wrong ${i}`, from)));
    expect(tally(first)).toEqual({ 401: 45 });
    const before = checks();
    const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => login(c, `burst-${i}@example.com`, `wrong ${i}`, from)));
    expect(tally(answers)).toEqual({ 401: 5, 429: 145 });
    expect(checks() - before).toBe(5);
    // Another address is not affected.
    expect((await login(c, 'burst-0@example.com', 'wrong again', { 'x-forwarded-for': '203.0.113.46' })).response.status).toBe(401);
  }, 120_000);

  it('a right password gives its place back: sign-ins that succeed never fill the address window', async () => {
    const user = await createUser(c.server.ctx.db, 'regular@example.com');
    await c.server.services.sessions.setPassword(user.id, 'the regular password', false);
    const from = { 'x-forwarded-for': '192.0.2.60' };
    // At most 5 sign-ins of one email are checked at a time (each holds one of its 5 places meanwhile).
    const ok = await Promise.all(Array.from({ length: 5 }, () => login(c, 'regular@example.com', 'the regular password', from)));
    expect(tally(ok)).toEqual({ 200: 5 });
    // Had the 5 successes kept their places, 45 failures would fill the address's 50 and the next sign-in would get 429.
    const failures = await Promise.all(Array.from({ length: 45 }, (_, i) => login(c, `other-${i % 9}@example.com`, 'nope', from)));
    expect(tally(failures)).toEqual({ 401: 45 });
    expect((await login(c, 'regular@example.com', 'the regular password', from)).response.status).toBe(200);
  }, 120_000);
});

describe('the failed sign-in limit counts per address', () => {
  // Counted per email alone, anyone could keep any user out (the admin included) with five wrong guesses every
  // 15 minutes (an audit did). Behind a trusted proxy the client's address is X-Forwarded-For's.
  let p: TestServer;
  beforeAll(async () => {
    p = await startTestServer({ env: { WEFT_TRUST_PROXY: 'true' }, server: { passwords: scryptPasswords } });
    await p.server.services.sessions.setPassword(p.userId, ADMIN_PASSWORD, false);
  });
  afterAll(async () => {
    await p?.close();
  });
  const from = (ip: string, email: string, password: string) =>
    request(`${p.url}/api/v1/auth/login`, 'POST', { email, password }, { 'x-forwarded-for': ip });

  it('guesses from one address lock out that address only: the owner signs in from theirs', async () => {
    const email = (await p.server.services.accounts.findUser(p.userId))!.email;
    for (let i = 0; i < 5; i++) expect((await from('203.0.113.7', email, `guess ${i}`)).status).toBe(401);
    expect((await from('203.0.113.7', email, ADMIN_PASSWORD)).status).toBe(429);
    expect((await from('198.51.100.9', email, ADMIN_PASSWORD)).status).toBe(200);
    // Guesses spread over many addresses still meet a ceiling for the email (100 in the window).
    for (let a = 0; a < 19; a++) {
      for (let i = 0; i < 5; i++) expect((await from(`192.0.2.${a + 1}`, email, `spread ${a}.${i}`)).status).toBe(401);
    }
    expect((await from('192.0.2.200', email, 'one more')).status).toBe(429);
    expect((await from('198.51.100.10', email, ADMIN_PASSWORD)).status).toBe(429);
  });
});
