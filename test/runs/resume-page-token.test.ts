// The resume page's token stands in for an API key: signed with a server secret the database does not hold.
// Before, it was signed with the key's stored hash alone, so anyone who could read the database files (an
// audit did, as another local user) could forge one and answer a pause as that key.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

const form = (url: string, fields: Record<string, string>) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() })
    .then(async (r) => ({ status: r.status, text: await r.text() }));

describe('the resume page token', () => {
  it('is refused when made from what the database holds; the one the page handed out answers the pause', async () => {
    const wf = await deploy(t, 'page-token', {
      blocks: [start(), { id: 'gate', type: 'human', name: 'Gate', config: { message: 'Go?', fields: [{ name: 'decision', type: 'string', required: true }] } }],
      edges: [{ from: 'start', to: 'gate' }],
    });
    const run = await t.call('POST', `/api/workflows/${wf}/execute`, {});
    expect(run.status, run.text).toBe(200);
    const exec: string = run.body.executionId;

    const page = await form(`${t.url}/resume/${wf}/${exec}`, { apiKey: t.apiKey });
    expect(page.status).toBe(200);
    const token = /name="token" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
    const [keyId, expiresAt] = token.split('.');
    expect(keyId).toMatch(/^[0-9a-f-]{36}$/);

    // What a reader of the database files has: the key's id and stored hash.
    const [row] = await t.server.ctx.db.query<{ key_hash: string }>('SELECT key_hash FROM api_keys WHERE id = $1', [keyId]);
    const scope = `resume:${wf}:${exec}`;
    const forged = `${keyId}.${expiresAt}.${createHmac('sha256', row!.key_hash).update(`${keyId}\n${scope}\n${expiresAt}`).digest('base64url')}`;
    const refused = await form(`${t.url}/resume/${wf}/${exec}/gate`, { token: forged, decision: 'forged' });
    expect(refused.status).toBe(401);
    expect(refused.text).toContain('This page has expired');
    expect((await t.call('GET', `/api/resume/${wf}/${exec}`)).body.pausePoints[0].resumeStatus).toBe('paused');

    const answered = await form(`${t.url}/resume/${wf}/${exec}/gate`, { token, decision: 'yes' });
    expect(answered.status, answered.text).toBe(200);
    expect(answered.text).toContain('Answer received');
  });
});
