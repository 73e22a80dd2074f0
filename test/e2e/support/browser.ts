// Debian's chromium driven by playwright-core (no browser download), plus the helpers every spec uses:
// a page on the app, signing in, screenshots under test-artifacts/e2e/<spec>/. See ./index.ts.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { repoRoot, type E2eApp } from './server.js';

export type { Browser, BrowserContext, Page } from 'playwright-core';

export async function launchBrowser(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) throw new Error(`No chromium at ${executablePath}: install the Debian package \`chromium\` or set CHROMIUM_PATH`);
  // Chromium refuses its sandbox as root (CI containers); /dev/shm is small in containers.
  const args = ['--disable-dev-shm-usage', ...(process.getuid?.() === 0 ? ['--no-sandbox'] : [])];
  return chromium.launch({ executablePath, headless: true, args });
}

const errorsOf = new WeakMap<Page, string[]>();

/** A new context (own cookies) and page on the app: baseURL set, so `page.goto('/workflows')` works. */
export async function newPage(browser: Browser, app: E2eApp, opts: { width?: number; height?: number; colorScheme?: 'light' | 'dark' } = {}): Promise<Page> {
  const context = await browser.newContext({
    baseURL: app.url,
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
    colorScheme: opts.colorScheme ?? 'light',
    acceptDownloads: true,
  });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const errors: string[] = [];
  errorsOf.set(page, errors);
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  return page;
}

/** Uncaught exceptions and console errors the page reported so far (assert it is empty where that matters). */
export const pageErrors = (page: Page): string[] => errorsOf.get(page) ?? [];

export interface SignInOptions {
  email?: string;
  password?: string;
  /** Wait until the app left /sign-in (default true); false when the spec handles a change-password prompt. */
  waitForDashboard?: boolean;
  /** Go to /sign-in first (default true); false: fill the form already shown (keeps its ?next= return path). */
  navigate?: boolean;
}

/**
 * Signs in through the dashboard's form at /sign-in: the fields labelled "Email" and "Password" and the
 * "Sign in" button. Defaults to the admin with its current password (no change-password prompt).
 */
export async function signIn(page: Page, app: E2eApp, opts: SignInOptions = {}): Promise<void> {
  if (opts.navigate ?? true) await page.goto('/sign-in');
  await page.getByLabel(/^email/i).fill(opts.email ?? app.adminEmail);
  await page.getByLabel(/^password/i).first().fill(opts.password ?? app.adminPassword);
  await page.getByRole('button', { name: /^sign in$/i }).click();
  if (opts.waitForDashboard ?? true) await page.waitForURL((u) => !u.pathname.startsWith('/sign-in'));
}

/**
 * Signs in without the form: POST /api/v1/auth/login from the page's context, which stores the session
 * cookie for its later navigations. For specs about other pages.
 */
export async function signInWithApi(page: Page, app: E2eApp, opts: { email?: string; password?: string } = {}): Promise<{ csrfToken: string }> {
  const res = await page.context().request.post(`${app.url}/api/v1/auth/login`, {
    data: { email: opts.email ?? app.adminEmail, password: opts.password ?? app.adminPassword },
  });
  if (res.status() !== 200) throw new Error(`sign-in failed: ${res.status()} ${await res.text()}`);
  return (await res.json()) as { csrfToken: string };
}

const counters = new Map<string, number>();

/** The spec's name: its file name without `.e2e.ts` (sign-in for test/e2e/sign-in.e2e.ts). */
function specName(): string {
  const file = expect.getState().testPath ?? 'unknown';
  return path.basename(file).replace(/\.e2e\.ts$/, '').replace(/\.[jt]s$/, '');
}

/** The folder screenshots go to (created, with a .gitignore so they are never committed). */
export function artifactsDir(spec = specName()): string {
  const root = path.join(repoRoot, 'test-artifacts');
  const dir = path.join(root, 'e2e', spec);
  fs.mkdirSync(dir, { recursive: true });
  const ignore = path.join(root, '.gitignore');
  if (!fs.existsSync(ignore)) fs.writeFileSync(ignore, '# Screenshots of the e2e tests: artifacts, never committed.\n*\n');
  return dir;
}

/** Saves a full-page PNG as test-artifacts/e2e/<spec>/<nn>-<name>.png (numbered in the order taken); returns its path. */
export async function shot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  const spec = specName();
  if (!counters.has(spec)) {
    // The first screenshot of this run: the previous run's pictures go, so the folder shows one run.
    for (const f of fs.readdirSync(artifactsDir(spec))) if (f.endsWith('.png')) fs.rmSync(path.join(artifactsDir(spec), f));
  }
  const n = (counters.get(spec) ?? 0) + 1;
  counters.set(spec, n);
  const safe = name.replace(/[^A-Za-z0-9._-]+/g, '-');
  const file = path.join(artifactsDir(spec), `${String(n).padStart(2, '0')}-${safe}.png`);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? true });
  return file;
}
