// A page on another origin runs a deployed workflow with a key, in a real browser (the preflight included), as
// pages written for the reference service do. The same page cannot ride on a signed-in user's cookie: without
// a key its run is refused before it starts, and nothing runs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, shot, signInWithApi, startApp, type Browser, type E2eApp } from './support/index.js';

let app: E2eApp;
let browser: Browser;
let site: http.Server;
let siteUrl = '';
let workflowId = '';

/** The other site's page: runs the workflow with `fetch` and writes what came back (or the error) into the page. */
const pageHtml = (target: string, key: string | null) => `<!doctype html><title>other site</title><pre id="out" style="white-space: pre-wrap">waiting</pre><script>
const headers = { 'content-type': 'application/json', 'x-execution-mode': 'sync' };
${key ? `headers['x-api-key'] = ${JSON.stringify(key)};` : ''}
fetch(${JSON.stringify(target)}, { method: 'POST', headers, body: JSON.stringify({ inputs: { name: 'from another site' } }), credentials: ${key ? "'omit'" : "'include'"} })
  .then(async (r) => { document.getElementById('out').textContent = JSON.stringify({ status: r.status, requestId: r.headers.get('x-request-id'), body: await r.json() }); })
  .catch((e) => { document.getElementById('out').textContent = 'refused: ' + e.message; });
</script>`;

beforeAll(async () => {
  app = await startApp();
  browser = await launchBrowser();
  const definition = {
    blocks: [
      { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'name', type: 'string' }] } },
      { id: 'greet', type: 'function', name: 'Greet', config: { code: 'return { text: "hello " + <start.name> }' } },
    ],
    edges: [{ from: 'start', to: 'greet' }],
  };
  const created = await app.api('POST', '/api/v1/workflows', { workspaceId: app.workspaceId, name: 'Cross-origin', definition });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  workflowId = created.body.data.workflow.id;
  expect((await app.api('POST', `/api/v1/workflows/${workflowId}/deploy`)).status).toBe(200);

  // Another origin (another port): its page holds the key, or (with ?cookie) only the browser's cookies.
  site = http.createServer((req, res) => {
    const withKey = !req.url?.includes('cookie');
    res.setHeader('content-type', 'text/html');
    res.end(pageHtml(`${app.url}/api/workflows/${workflowId}/execute`, withKey ? app.apiKey : null));
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await new Promise((resolve) => site?.close(resolve));
});

/** Evaluated in the page (a string: these suites are type-checked without the DOM's types). */
const OUTPUT_WRITTEN = "document.getElementById('out').textContent !== 'waiting'";

const runsOf = async (): Promise<number> =>
  (await app.api('GET', `/api/v1/logs?workspaceId=${app.workspaceId}&workflowId=${workflowId}`)).body.data.length;

describe('execute called from a page on another origin', () => {
  it('runs with the page\'s key and the page reads the output and the request id', async () => {
    const page = await newPage(browser, app);
    const preflights: string[] = [];
    page.on('request', (r) => { if (r.method() === 'OPTIONS') preflights.push(r.url()); });
    await page.goto(siteUrl);
    await page.waitForFunction(OUTPUT_WRITTEN);
    const text = (await page.textContent('#out')) ?? '';
    await shot(page, 'cross-origin-execute');
    const shown = JSON.parse(text) as { status: number; requestId: string | null; body: { success: boolean; output: unknown } };
    expect(shown.status).toBe(200);
    expect(shown.body.success).toBe(true);
    expect(shown.body.output).toEqual({ text: 'hello from another site' });
    expect(shown.requestId).toMatch(/\S/);
    await page.close();
  });

  it('refuses the same page without a key even when the user is signed in: the browser gets no answer and nothing runs', async () => {
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    const before = await runsOf();
    await page.goto(`${siteUrl}/?cookie`);
    await page.waitForFunction(OUTPUT_WRITTEN);
    expect(await page.textContent('#out')).toMatch(/^refused: /);
    expect(await runsOf()).toBe(before);
    await page.close();
  });
});
