// Settings -> API keys in a real browser: sign in through the form, create a workspace key (shown once),
// use it against the API with fetch, see it listed by its suffix, revoke it and see the API refuse it;
// a personal key; a read member whose workspace-key request the server refuses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors as allPageErrors, shot, signIn, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

/** Uncaught exceptions and console errors, except failed loads (the refusals are asserted on the page). */
const pageErrors = (page: Page) => allPageErrors(page).filter((e) => !e.startsWith('console: Failed to load resource'));

let app: E2eApp;
let browser: Browser;

beforeAll(async () => {
  app = await startApp();
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

async function createKey(page: Page, name: string, type: 'Workspace key' | 'Personal key'): Promise<string> {
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Type').selectOption({ label: type });
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = (await page.getByTestId('new-api-key').innerText()).trim();
  expect(secret).toMatch(/^sk-weft-[A-Za-z0-9]{32}$/);
  return secret;
}

const listWorkflows = (key: string) =>
  fetch(`${app.url}/api/v1/workflows?workspaceId=${app.workspaceId}`, { headers: { 'x-api-key': key } });

describe('API keys page', () => {
  it('creates a workspace key shown once, which works against the API until it is revoked', async () => {
    const page = await newPage(browser, app);
    await signIn(page, app);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await shot(page, 'keys-page');

    const secret = await createKey(page, 'e2e ci', 'Workspace key');
    await shot(page, 'key-created');
    // The key works with the API as any client would send it.
    const res = await listWorkflows(secret);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { success: boolean }).success).toBe(true);

    // Closing the dialog drops the secret: the list shows only its suffix.
    await page.getByRole('button', { name: 'Done, I saved it' }).click();
    const row = page.getByRole('row', { name: /e2e ci/ });
    await row.waitFor();
    expect(await row.innerText()).toContain(`sk-weft-...${secret.slice(-4)}`);
    expect(await page.content()).not.toContain(secret);

    // Revoke, with a confirmation; the server refuses the key within its 5 s lookup cache.
    await row.getByRole('button', { name: 'Revoke e2e ci' }).click();
    const dialog = page.getByRole('dialog', { name: /Revoke "e2e ci"/ });
    await shot(page, 'revoke-confirm');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await row.waitFor({ state: 'detached' });
    let status = 0;
    for (const until = Date.now() + 10_000; Date.now() < until;) {
      status = (await listWorkflows(secret)).status;
      if (status === 401) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(status).toBe(401);
    await shot(page, 'key-revoked');
    expect(pageErrors(page)).toEqual([]);
  });

  it('creates a personal key that acts as the signed-in user', async () => {
    const page = await newPage(browser, app);
    await signIn(page, app);
    await page.goto('/settings/api-keys');
    const secret = await createKey(page, 'laptop', 'Personal key');
    const res = await listWorkflows(secret);
    expect(res.status).toBe(200);
    await page.getByRole('button', { name: 'Done, I saved it' }).click();
    expect(await page.getByRole('row', { name: /laptop/ }).innerText()).toContain('Personal (yours)');
    // A personal key may mint another personal key; the workspace setting below can refuse them all.
    await page.getByRole('button', { name: 'Refuse personal keys' }).click();
    await page.getByRole('dialog', { name: 'Refuse personal keys?' }).getByRole('button', { name: 'Refuse personal keys' }).click();
    await page.getByRole('button', { name: 'Allow personal keys' }).waitFor();
    let status = 0;
    for (const until = Date.now() + 10_000; Date.now() < until;) {
      status = (await listWorkflows(secret)).status;
      if (status === 403) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(status).toBe(403);
    await shot(page, 'personal-keys-refused');
    await page.getByRole('button', { name: 'Allow personal keys' }).click();
    await page.getByRole('button', { name: 'Refuse personal keys' }).waitFor();
    expect(pageErrors(page)).toEqual([]);
  });

  it('a read member cannot list keys, and the server refuses their workspace key', async () => {
    const reader = await app.createUser({ email: 'reader@example.com', role: 'read', password: 'reader-password-0123' });
    const page = await newPage(browser, app);
    await signIn(page, app, { email: reader.email, password: reader.password });
    await page.goto('/settings/api-keys');
    await page.getByText('Only workspace admins can list every key of the workspace.').waitFor();
    // The form offers it with a warning; the server is what refuses it.
    await page.getByLabel('Name').fill('not mine to make');
    await page.getByLabel('Type').selectOption({ label: 'Workspace key' });
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('alert').filter({ hasText: /Not allowed/ }).waitFor();
    expect(await page.getByTestId('new-api-key').count()).toBe(0);
    await shot(page, 'read-member-refused');
  });
});
