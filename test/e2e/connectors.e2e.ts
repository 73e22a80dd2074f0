// Connectors in a real browser (issue 32): a refused document shows the API's message inline; a pasted
// OpenAPI document with bearer auth from a secret lists its operations; the editor's palette offers
// them as blocks with forms generated from their schemas; a draft run calls the local service.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors as allPageErrors, shot, signInWithApi, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

const pageErrors = (page: Page) => allPageErrors(page).filter((e) => !e.startsWith('console: Failed to load resource'));
const TOKEN = 'pets-e2e-token-5f2a9c';

const DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'Pets', version: '1' },
  paths: {
    '/pets/{petId}': {
      get: {
        operationId: 'getPet',
        summary: 'One pet by id',
        parameters: [
          { name: 'petId', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'limit', in: 'query', schema: { type: 'integer' } },
          { name: 'verbose', in: 'query', schema: { type: 'boolean' } },
          { name: 'species', in: 'query', schema: { type: 'string', enum: ['cat', 'dog'] } },
        ],
      },
    },
    '/pets': {
      post: {
        summary: 'Add a pet',
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } } } } } },
      },
    },
  },
};

let app: E2eApp;
let browser: Browser;
let service: http.Server;
let serviceUrl: string;
const received: { url: string; authorization?: string }[] = [];

beforeAll(async () => {
  // The service the connector describes: answers with what it received.
  service = http.createServer((req, res) => {
    received.push({ url: req.url ?? '', authorization: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ url: req.url, authorization: req.headers.authorization ?? null }));
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  serviceUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
  // The service listens on loopback, which the outbound guard refuses unless allowed.
  app = await startApp({ env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true' } });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await new Promise((resolve) => service?.close(resolve));
});

const node = (page: Page, blockId: string) => page.locator(`.react-flow__node[data-id="${blockId}"]`);

describe('connectors', () => {
  it('adds a connector from a pasted document, shows its operations and places one in the editor with a generated form', async () => {
    const set = await app.api('PUT', '/api/v1/secrets/PETS_TOKEN', { workspaceId: app.workspaceId, value: TOKEN });
    expect(set.status).toBeLessThan(300);
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto('/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Connectors' }).click();
    await page.getByText('No connectors yet').waitFor();

    // A document the API refuses: its message shows inline, nothing is added.
    await page.getByLabel('Name', { exact: true }).fill('Pets');
    await page.getByLabel('OpenAPI document (JSON)').fill(JSON.stringify({ openapi: '2.0', paths: {} }));
    await page.getByRole('button', { name: 'Add connector' }).click();
    await page.getByRole('alert').filter({ hasText: /OpenAPI 3\.0 and 3\.1/ }).waitFor();
    // Text that is not JSON is caught before it is sent.
    await page.getByLabel('OpenAPI document (JSON)').fill('{ not json');
    await page.getByRole('button', { name: 'Add connector' }).click();
    await page.getByRole('alert').filter({ hasText: 'Not valid JSON' }).waitFor();

    await page.getByLabel('OpenAPI document (JSON)').fill(JSON.stringify(DOCUMENT, null, 2));
    await page.getByLabel('Base URL (optional)').fill(serviceUrl);
    await page.getByLabel('Type').selectOption('bearer');
    await page.getByLabel('Secret', { exact: true }).selectOption('PETS_TOKEN');
    await page.getByRole('button', { name: 'Add connector' }).click();
    await page.getByRole('status').filter({ hasText: 'Added Pets with 2 operations' }).waitFor();
    const operations = page.getByRole('table', { name: 'Operations of Pets' });
    await operations.getByRole('row', { name: /GET \/pets\/\{petId\} getPet One pet by id/ }).waitFor();
    // The operation without an operationId got a generated one.
    expect(await operations.getByRole('row').nth(2).innerText()).toMatch(/POST\s+\/pets\s+post_pets\s+Add a pet/);
    await page.getByText('bearer · {{PETS_TOKEN}}').waitFor();
    expect(await page.locator('body').innerText()).not.toContain(TOKEN);
    await shot(page, 'connectors-page', { fullPage: false });
    // With a connector listed the form folds behind a button.
    await page.getByRole('button', { name: 'Add a connector' }).click();
    await page.getByLabel('OpenAPI document (JSON)').waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Add a connector' }).waitFor();

    // The editor's palette lists the operations; placing one gives a form from its schemas.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows' }).click();
    await page.getByRole('button', { name: 'New workflow' }).click();
    await page.getByLabel('Workflow name').fill('Calls a connector');
    await page.getByRole('button', { name: 'Create and open' }).click();
    await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/);
    await node(page, 'start').waitFor();
    const palette = page.getByRole('group', { name: 'Connector Pets' });
    await palette.getByRole('button', { name: 'Add Pets post_pets block' }).waitFor();
    await node(page, 'start').click();
    await palette.getByRole('button', { name: 'Add Pets getPet block' }).click();
    await node(page, 'connector').waitFor();
    expect(await node(page, 'connector').innerText()).toContain('getPet');
    const params = page.getByRole('group', { name: 'Parameters' });
    // Path parameters first, then the others by name.
    expect((await params.locator('.field-label, label.checkbox').allInnerTexts()).map((t) => t.trim())).toEqual(['Pet ID *', 'Limit', 'Species', 'Verbose']);
    await params.getByLabel('Pet ID').fill('<start.message>');
    await params.getByLabel('Limit').fill('3');
    await params.getByLabel('Verbose').check();
    await params.getByLabel('Species').selectOption('cat');
    expect(await page.getByLabel('Operation').inputValue()).toBe('getPet');
    await shot(page, 'connector-block-form', { fullPage: false });

    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
    await page.getByRole('tab', { name: 'Run' }).click();
    await page.getByLabel('message').fill('rex');
    await page.getByRole('button', { name: 'Run draft', exact: true }).click();
    const output = page.getByTestId('run-output');
    await output.waitFor();
    const result = JSON.parse(await output.innerText());
    expect(result.status).toBe(200);
    expect(result.data.url).toBe('/pets/rex?limit=3&verbose=true&species=cat');
    // The service got the secret; the run shows it masked.
    expect(received.at(-1)?.authorization).toBe(`Bearer ${TOKEN}`);
    expect(result.data.authorization).toBe('Bearer ***');
    expect(await page.locator('body').innerText()).not.toContain(TOKEN);

    // The other operation's form has the body as JSON.
    await page.getByRole('tab', { name: 'Block' }).click();
    await palette.getByRole('button', { name: 'Add Pets post_pets block' }).click();
    await node(page, 'connector2').waitFor();
    await page.getByText('This operation takes no parameters.').waitFor();
    await page.getByLabel('Body').waitFor();
    expect(await page.getByText('A JSON object with name (required), tags.').count()).toBe(1);
    await shot(page, 'connector-body-form', { fullPage: false });
    expect(pageErrors(page)).toEqual([]);
  });
});
