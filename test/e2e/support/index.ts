/**
 * The end-to-end harness: a real Weft server built into dist/ and Debian's chromium (playwright-core).
 * Run with `npm run test:e2e` (after `npm run build`); specs are test/e2e/*.e2e.ts, one at a time.
 *
 *   import { startApp, launchBrowser, newPage, signIn, shot } from './support/index.js';
 *
 *   let app: E2eApp; let browser: Browser;
 *   beforeAll(async () => { app = await startApp(); browser = await launchBrowser(); });
 *   afterAll(async () => { await browser?.close(); await app?.stop(); });
 *
 *   it('...', async () => {
 *     const page = await newPage(browser, app);   // own cookies; baseURL = app.url; 1280x800
 *     await signIn(page, app);                      // the /sign-in form as the admin; waits to leave /sign-in
 *     await page.goto('/workflows');
 *     await shot(page, 'workflows');                // test-artifacts/e2e/<spec>/01-workflows.png
 *   });
 *
 * startApp(opts?) -> E2eApp: `weft setup --json` on a fresh temp data dir, then `weft serve` on a free port.
 *   opts.keepOneTimePassword: keep the admin's printed one-time password (mustChangePassword set);
 *     by default the harness changes it over the API to ADMIN_PASSWORD, so the app does not prompt.
 *   opts.env: extra environment for the server and the CLI.
 *   E2eApp: url, dataDir, adminEmail, adminPassword (current), oneTimePassword (printed by setup),
 *     apiKey (a workspace key of "default"), workspaceId, adminUserId,
 *     api(method, path, body?, headers?) -> {status, headers, body}: fetch with X-API-Key = apiKey,
 *     cli(args) -> parsed `--json` output of `weft <args>` on the same data dir,
 *     createUser({email, role, password?, name?}) -> {id, email, password}: a member of "default",
 *     output() -> server logs so far, stop().
 * launchBrowser() -> Browser: headless /usr/bin/chromium (or CHROMIUM_PATH).
 * newPage(browser, app, {width?, height?, colorScheme?}) -> Page; pageErrors(page) -> console errors and
 *   uncaught exceptions seen so far.
 * signIn(page, app, {email?, password?, waitForDashboard?, navigate?}): goes to /sign-in (unless navigate: false),
 *   fills "Email" and "Password", clicks "Sign in", waits until the app left /sign-in (unless waitForDashboard: false).
 * signInWithApi(page, app, {email?, password?}) -> {csrfToken}: the session cookie without the form.
 * shot(page, name, {fullPage?}) -> file path; artifactsDir() -> the spec's screenshot folder.
 */
export { ADMIN_PASSWORD, freePort, repoRoot, setPassword, startApp, type ApiResponse, type E2eApp, type StartAppOptions } from './server.js';
export { artifactsDir, launchBrowser, newPage, pageErrors, shot, signIn, signInWithApi, type Browser, type BrowserContext, type Page, type SignInOptions } from './browser.js';
