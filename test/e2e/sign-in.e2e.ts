// First sign-in in a real browser: the admin's one-time password from `weft setup`, the prompt to
// choose a new one, the dashboard; then signing out, and the old password no longer working.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors, shot, signIn, startApp, type Browser, type E2eApp } from './support/index.js';

let app: E2eApp;
let browser: Browser;
beforeAll(async () => {
  app = await startApp({ keepOneTimePassword: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

const NEW_PASSWORD = 'a password of my own choosing';

describe('first sign-in', () => {
  it('signs in with the printed one-time password, chooses a new one, and lands on the dashboard', async () => {
    const page = await newPage(browser, app);
    // Not signed in: a page of the app sends the browser to the sign-in form.
    await page.goto('/workflows');
    await page.waitForURL((u) => u.pathname === '/sign-in');
    // Waited for: the URL changes before the lazily loaded form has rendered (seen on a cold first page).
    await page.getByRole('heading', { name: 'Sign in to Weft' }).waitFor({ state: 'visible' });
    await shot(page, 'sign-in');

    // A wrong password is refused by the server, and the form says so.
    await signIn(page, app, { password: 'not the password', waitForDashboard: false, navigate: false });
    await page.getByText('Invalid email or password').waitFor();
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    await shot(page, 'wrong-password');

    await signIn(page, app, { password: app.oneTimePassword, waitForDashboard: false, navigate: false });
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await shot(page, 'choose-new-password');
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();

    // Back where the browser was going, signed in.
    await page.waitForURL((u) => u.pathname === '/workflows');
    await page.getByRole('heading', { name: 'Workflows', exact: true }).waitFor();
    await page.getByText('Loading').first().waitFor({ state: 'detached' });
    await shot(page, 'dashboard');

    // The server agrees: the one-time password is gone, the new one signs in without a prompt.
    const old = await app.api('POST', '/api/v1/auth/login', { email: app.adminEmail, password: app.oneTimePassword }, {});
    expect(old.status).toBe(401);
    const fresh = await app.api('POST', '/api/v1/auth/login', { email: app.adminEmail, password: NEW_PASSWORD }, {});
    expect(fresh.status).toBe(200);
    expect(fresh.body.mustChangePassword).toBe(false);

    // The session cookie is HttpOnly: the page's scripts cannot read it.
    expect(await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie)).not.toContain('weft_session');
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === 'weft_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });

    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
    await page.context().close();
  });

  it('the new password signs in directly; signing out sends the browser back to the sign-in form', async () => {
    const page = await newPage(browser, app);
    await signIn(page, app, { password: NEW_PASSWORD });
    expect(new URL(page.url()).pathname).toBe('/');
    await page.getByRole('link', { name: 'Workflows', exact: true }).first().waitFor();
    await page.getByText('Loading').first().waitFor({ state: 'detached' });
    await shot(page, 'home');

    // The user menu is the button named after the user (the admin is called Admin).
    await page.getByRole('button', { name: 'Admin', exact: true }).click();
    await page.getByRole('menuitem', { name: 'Sign out', exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/sign-in');
    expect((await page.context().cookies()).find((c) => c.name === 'weft_session')).toBeUndefined();
    // The server ended the session: a deep link asks for a sign-in again.
    await page.goto('/runs');
    await page.waitForURL((u) => u.pathname === '/sign-in');
    await shot(page, 'signed-out');
    await page.context().close();
  });
});
