import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockTypes, workflowDefinitionSchema } from '../../src/engine/index.js';
import { startBanner } from '../../src/start-banner.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';

/** What a newcomer finds without a key: the landing at /, and the definition's JSON Schema. */
let t: TestServer;
beforeAll(async () => {
  // Without a built dashboard: browsers get the small HTML page (test/sessions/web-app.test.ts serves a build).
  t = await startTestServer({ env: { WEFT_WEB_DIST: path.join(import.meta.dirname, 'no-dashboard-build') } });
});
afterAll(async () => {
  await t?.close();
});

const SCHEMA = '/api/v1/schemas/workflow-definition.json';

describe('GET /', () => {
  it('answers JSON pointing at the API reference, the OpenAPI document, the schema and health', async () => {
    const r = await request(`${t.url}/`, 'GET');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.body.links).toEqual({
      apiReference: '/api/docs', openapi: '/api/openapi.json', workflowDefinitionSchema: SCHEMA, health: '/healthz', readiness: '/readyz',
    });
    expect(r.body.auth).toMatch(/X-API-Key/);
    // What the start banner says about a lost password is here too; no dashboard link without a build.
    expect(r.body.lostPassword).toContain('npx weft users reset-password --email <email>');
    expect(r.body.signIn).toMatch(/not built/);
  });

  it('answers a small HTML page to a browser', async () => {
    const r = await request(`${t.url}/`, 'GET', undefined, { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    for (const href of ['/api/docs', '/api/openapi.json', SCHEMA, '/healthz']) expect(r.text).toContain(`href="${href}"`);
  });
});

describe('GET /api/v1/schemas/workflow-definition.json', () => {
  it('needs no key, is cacheable and answers 304 to its ETag', async () => {
    const r = await request(`${t.url}${SCHEMA}`, 'GET');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/schema+json; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('public, max-age=3600');
    const etag = r.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await request(`${t.url}${SCHEMA}`, 'GET', undefined, { 'if-none-match': etag! });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    // No rate-limit bucket is taken without a key; a key changes nothing.
    expect((await t.call('GET', SCHEMA)).body).toEqual(r.body);
  });

  it('is the zod definition schema, with each block type and its config schema', async () => {
    const s = (await request(`${t.url}${SCHEMA}`, 'GET')).body;
    expect(s.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(s.title).toBe('Weft workflow definition');
    expect(s.required).toEqual(['blocks']);
    expect(Object.keys(s.properties).sort()).toEqual(Object.keys(workflowDefinitionSchema.shape).sort());
    expect(s.properties.blocks.items).toEqual({ $ref: '#/$defs/block' });
    const block = s.$defs.block;
    expect(block.required).toEqual(['id', 'type', 'name']);
    expect(block.properties.blocks.items).toEqual({ $ref: '#/$defs/block' });
    expect(block.properties.type.enum.sort()).toEqual([...blockTypes.keys()].sort());
    expect(JSON.stringify(s)).not.toContain('__schema');
    const agent = block.allOf.find((c: any) => c.if.properties.type.const === 'agent').then.properties.config;
    expect(agent.required).toEqual(['model', 'userPrompt']);
    expect(agent.additionalProperties).toBe(false);
    expect(Object.keys(agent.properties)).toContain('tools');
  });

  it('describes every example: its block types and config keys are in the schema', async () => {
    const s = (await request(`${t.url}${SCHEMA}`, 'GET')).body;
    const configOf = (type: string) => s.$defs.block.allOf.find((c: any) => c.if.properties.type.const === type).then.properties.config;
    const visit = (blocks: any[]) => {
      for (const b of blocks) {
        expect(s.$defs.block.properties.type.enum).toContain(b.type);
        const config = configOf(b.type);
        if (config.additionalProperties === false) for (const key of Object.keys(b.config ?? {})) expect(Object.keys(config.properties)).toContain(key);
        if (b.blocks) visit(b.blocks);
      }
    };
    for (const f of fs.readdirSync('examples').filter((n) => n.endsWith('.json'))) {
      visit(JSON.parse(fs.readFileSync(path.join('examples', f), 'utf8')).blocks);
    }
  });

  it('is listed in the OpenAPI document', async () => {
    const doc = (await request(`${t.url}/api/openapi.json`, 'GET')).body;
    expect(doc.paths[SCHEMA].get.summary).toBe('JSON Schema of a workflow definition (for editors)');
  });
});

describe('the start-up lines', () => {
  it('say where the API reference, the landing (the dashboard later) and a key are', () => {
    const text = startBanner('http://127.0.0.1:3000');
    expect(text).toContain('API reference:  http://127.0.0.1:3000/api/docs');
    expect(text).toContain('http://127.0.0.1:3000/ ');
    expect(text).toContain('dashboard');
    expect(text).toContain('npx weft keys create --workspace default');
    // The first-start check in the CLI tests looks for this phrase; these lines must not contain it.
    expect(text).not.toContain('Workspace API key');
  });
});
