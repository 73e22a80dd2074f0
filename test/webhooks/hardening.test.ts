// The trigger's credentials from workspace secrets, its IP allow list, the custom token header alone, the
// idempotency field before delivery headers, and the shape of its retryable refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpError } from '../../src/http/errors.js';
import { retryableRefusal } from '../../src/webhooks/service.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { echo, finishedRuns, hmac, post, runsOf, webhookInNewWorkspace, webhookWorkflow } from './support.js';

let t: TestServer;
const tiny = JSON.stringify({ free: { syncPerMinute: 2, asyncPerMinute: 2, apiPerMinute: 100 } });
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_PLAN_LIMITS: tiny } });
});
afterAll(async () => {
  await t?.close();
});

const setSecret = async (name: string, value: string) => {
  const r = await t.call('PUT', `/api/v1/secrets/${name}`, { workspaceId: t.workspaceId, value });
  expect(r.status, r.text).toBeLessThan(300);
};
const claims = async (workflowId: string) => t.server.ctx.db.query('SELECT 1 FROM webhook_deliveries WHERE workflow_id = $1', [workflowId]);
/** Lets a few runs that would have been queued show up before counting them. */
const settle = () => new Promise((r) => setTimeout(r, 300));

describe('credentials from workspace secrets', () => {
  it('a {{NAME}} token is the secret\'s value, read at each delivery; the reference text does not authenticate', async () => {
    await setSecret('HOOK_TOKEN', 'real-hook-token-1');
    const code = 'return { a: <webhook.a>, echoed: <webhook.headers>["x-echo"] ?? null }';
    const { id, url } = await webhookWorkflow(t, echo({ requireAuth: true, token: '{{HOOK_TOKEN}}' }, code));
    const literal = await post(url, { a: 1 }, { authorization: 'Bearer {{HOOK_TOKEN}}' });
    expect(literal.status).toBe(401);
    expect(literal.text).toBe('Unauthorized - Invalid authentication token');
    expect(await runsOf(t, id)).toHaveLength(0);
    // The value authenticates; a header carrying it is withheld from the workflow like the token itself.
    expect((await post(url, { a: 2 }, { authorization: 'Bearer real-hook-token-1', 'x-echo': 'real-hook-token-1' })).status).toBe(200);
    const [run] = await finishedRuns(t, id);
    expect(run.output).toEqual({ a: 2, echoed: null });
    // Nothing stored holds the value: the definition keeps the reference.
    const stored = JSON.stringify(await t.server.ctx.db.query('SELECT definition FROM workflow_versions WHERE workflow_id = $1', [id]));
    expect(stored).toContain('{{HOOK_TOKEN}}');
    expect(stored).not.toContain('real-hook-token-1');
    // Replaced: the new value counts at once, the old one no more.
    await setSecret('HOOK_TOKEN', 'real-hook-token-2');
    expect((await post(url, { a: 3 }, { authorization: 'Bearer real-hook-token-1' })).status).toBe(401);
    expect((await post(url, { a: 4 }, { authorization: 'Bearer real-hook-token-2' })).status).toBe(200);
    await finishedRuns(t, id, 2);
  });

  it('a token referencing a deleted secret refuses every delivery, the reference text and the old value alike', async () => {
    await setSecret('GONE_TOKEN', 'gone-token-value');
    const { id, url } = await webhookWorkflow(t, echo({ requireAuth: true, token: 'pre-{{GONE_TOKEN}}', tokenHeader: 'X-Hook-Token' }));
    expect((await post(url, { a: 1 }, { 'x-hook-token': 'pre-gone-token-value' })).status).toBe(200);
    await finishedRuns(t, id);
    const del = await t.call('DELETE', `/api/v1/secrets/GONE_TOKEN?workspaceId=${t.workspaceId}`);
    expect(del.status, del.text).toBe(200);
    expect(del.body.data.usedBy.map((w: { id: string }) => w.id)).toContain(id);
    for (const given of ['pre-gone-token-value', 'pre-{{GONE_TOKEN}}', '{{GONE_TOKEN}}', '']) {
      const r = await post(url, { a: 2 }, { 'x-hook-token': given, 'idempotency-key': `gone-${given}` });
      expect(r.status, given).toBe(401);
      expect(r.text).toBe('Unauthorized - Authentication required but no token configured');
    }
    await settle();
    expect(await runsOf(t, id)).toHaveLength(1);
    expect(await claims(id)).toHaveLength(1);
  });

  it('a {{NAME}} signing secret signs with the value; a signature made with the reference text is refused', async () => {
    await setSecret('GH_HOOK_SECRET', 'gh-signing-value');
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'github', secret: '{{GH_HOOK_SECRET}}' }));
    const body = JSON.stringify({ a: 5 });
    const forged = await post(url, body, { 'x-hub-signature-256': `sha256=${hmac('{{GH_HOOK_SECRET}}', body)}` });
    expect(forged.status).toBe(401);
    expect((await post(url, body, { 'x-hub-signature-256': `sha256=${hmac('gh-signing-value', body)}` })).status).toBe(200);
    const [run] = await finishedRuns(t, id);
    expect(run.output).toEqual({ a: 5 });
    await t.call('DELETE', `/api/v1/secrets/GH_HOOK_SECRET?workspaceId=${t.workspaceId}`);
    const body2 = JSON.stringify({ a: 6 });
    const after = await post(url, body2, { 'x-hub-signature-256': `sha256=${hmac('gh-signing-value', body2)}` });
    expect(after.status).toBe(401);
    expect(after.text).toBe('Unauthorized - Authentication required but no signing secret configured');
  });
});

describe('token header', () => {
  it('with tokenHeader set, only that header carries the token: Authorization: Bearer is refused', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ requireAuth: true, token: 'hdr-token-1', tokenHeader: 'X-Hook-Token' }));
    expect((await post(url, { a: 1 }, { authorization: 'Bearer hdr-token-1' })).status).toBe(401);
    expect((await post(url, { a: 1 }, { authorization: 'Bearer hdr-token-1', 'x-hook-token': 'nope' })).status).toBe(401);
    expect(await runsOf(t, id)).toHaveLength(0);
    expect((await post(url, { a: 2 }, { 'x-hook-token': 'hdr-token-1' })).status).toBe(200);
    await finishedRuns(t, id);
  });
});

describe('idempotency field', () => {
  it('the body field wins over delivery headers: same value, other headers -> one run', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ idempotencyField: 'order.id' }));
    expect((await post(url, { a: 1, order: { id: 'o-1' } }, { 'webhook-id': 'msg-a', 'idempotency-key': 'k-a' })).status).toBe(200);
    await finishedRuns(t, id);
    expect((await post(url, { a: 2, order: { id: 'o-1' } }, { 'webhook-id': 'msg-b', 'idempotency-key': 'k-b' })).status).toBe(200);
    expect((await post(url, { a: 3, order: { id: 'o-1' } }, { 'x-github-delivery': 'gh-c' })).status).toBe(200);
    await settle();
    expect((await runsOf(t, id)).map((r) => r.output)).toEqual([{ a: 1 }]);
  });

  it('different field values with the same header -> two runs; without the field the header still dedupes', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ idempotencyField: 'order.id' }));
    expect((await post(url, { a: 1, order: { id: 'o-1' } }, { 'webhook-id': 'same' })).status).toBe(200);
    expect((await post(url, { a: 2, order: { id: 'o-2' } }, { 'webhook-id': 'same' })).status).toBe(200);
    await finishedRuns(t, id, 2);
    // No value at the path (absent, an object, empty): the headers give the key, as before.
    expect((await post(url, { a: 3 }, { 'webhook-id': 'hdr-1' })).status).toBe(200);
    expect((await post(url, { a: 4, order: { id: { nested: 1 } } }, { 'webhook-id': 'hdr-1' })).status).toBe(200);
    expect((await post(url, { a: 5, order: { id: '' } }, { 'webhook-id': 'hdr-1' })).status).toBe(200);
    await finishedRuns(t, id, 3);
    await settle();
    expect((await runsOf(t, id)).map((r) => (r.output as { a: number }).a).sort()).toEqual([1, 2, 3]);
  });
});

describe('allowed IPs', () => {
  it('refuses to save an entry that is no address or CIDR range (400 naming it)', async () => {
    for (const bad of ['not-an-ip', '10.0.0.0/33', '300.1.1.1', '2001:db8::/129', 'fe80::1%eth0', '10.0.0.1/']) {
      const r = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: `ips-${Math.random()}`, definition: echo({ allowedIps: ['127.0.0.1', bad] }) });
      expect(r.status, bad).toBe(400);
      expect(r.text).toContain(JSON.stringify(bad).slice(1, -1));
      expect(r.text).toContain('allowedIps');
    }
    const ok = await t.call('POST', '/api/v1/workflows', {
      workspaceId: t.workspaceId, name: 'ips-ok', definition: echo({ allowedIps: ['203.0.113.7', '10.0.0.0/8', '2001:db8::/32', '::ffff:192.0.2.1', '::1'] }),
    });
    expect(ok.status, ok.text).toBe(201);
  });

  it('a delivery from outside the list is 403 (token right or not), X-Forwarded-For is not trusted by default', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ allowedIps: ['10.0.0.0/8', '2001:db8::/32'], requireAuth: true, token: 'ip-tok' }));
    const attempts: Record<string, string>[] = [{ authorization: 'Bearer ip-tok' }, { authorization: 'Bearer ip-tok', 'x-forwarded-for': '10.1.2.3' }, {}];
    for (const headers of attempts) {
      const r = await post(url, { a: 1 }, headers);
      expect(r.status).toBe(403);
      expect(r.text).toBe('Forbidden - IP not allowed');
      expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    }
    expect(await runsOf(t, id)).toHaveLength(0);
    expect(await claims(id)).toHaveLength(0);
  });

  it('a delivery from a listed address or range passes (loopback here, in either family); an empty list allows all', async () => {
    const one = await webhookWorkflow(t, echo({ allowedIps: ['127.0.0.0/8', '::1'] }));
    expect((await post(one.url, { a: 1 })).status).toBe(200);
    const two = await webhookWorkflow(t, echo({ allowedIps: ['192.0.2.1', '127.0.0.1', '::ffff:127.0.0.1', '::1'] }));
    expect((await post(two.url, { a: 2 })).status).toBe(200);
    const three = await webhookWorkflow(t, echo({ allowedIps: [] }));
    expect((await post(three.url, { a: 3 })).status).toBe(200);
    await finishedRuns(t, one.id);
    await finishedRuns(t, two.id);
    await finishedRuns(t, three.id);
  });

  describe('behind a trusted proxy (WEFT_TRUST_PROXY)', () => {
    let p: TestServer;
    beforeAll(async () => {
      p = await startTestServer({ env: { WEFT_TRUST_PROXY: 'true' } });
    });
    afterAll(async () => {
      await p?.close();
    });

    it('the client address is the X-Forwarded-For one', async () => {
      const { id, url } = await webhookWorkflow(p, echo({ allowedIps: ['10.0.0.0/8'] }));
      expect((await post(url, { a: 1 }, { 'x-forwarded-for': '10.1.2.3' })).status).toBe(200);
      const outside = await post(url, { a: 2 }, { 'x-forwarded-for': '198.51.100.9' });
      expect(outside.status).toBe(403);
      expect((await post(url, { a: 3 })).status).toBe(403);
      await finishedRuns(p, id);
    });
  });
});

describe('retryable refusals', () => {
  it('a rate-limited delivery answers 429 {error, code, retryable, retryAfterSeconds} with Retry-After', async () => {
    const { wid, url } = await webhookInNewWorkspace(t, 'free', 'limited');
    let refused;
    // asyncPerMinute 2 -> burst 4.
    for (let i = 0; i < 5 && !refused; i++) {
      const r = await post(url, { a: i });
      if (r.status === 429) refused = r;
    }
    expect(refused).toBeDefined();
    const body = refused!.body;
    expect(body).toMatchObject({ error: 'Rate limit exceeded. Please try again later.', code: 'RATE_LIMIT_EXCEEDED', retryable: true });
    expect(body.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(Number(refused!.headers.get('retry-after'))).toBe(body.retryAfterSeconds);
    // The fields it carried before stay.
    expect(typeof body.retryAfter).toBe('number');
    await finishedRuns(t, wid, 4);
  });

  it('a 503 without a code is given one, retryable and Retry-After; other refusals pass unchanged', () => {
    const shaped = retryableRefusal(new HttpError(503, 'Queue unavailable')) as HttpError;
    expect(shaped.extra).toEqual({ code: 'SERVICE_UNAVAILABLE', retryable: true, retryAfterSeconds: 2 });
    expect(shaped.headers).toEqual({ 'Retry-After': '2' });
    const concurrency = new HttpError(429, 'Too many', { code: 'EXECUTION_CONCURRENCY_LIMIT', retryable: true, retryAfterSeconds: 5 }, { 'Retry-After': '5' });
    expect((retryableRefusal(concurrency) as HttpError).extra).toEqual(concurrency.extra);
    const usage = new HttpError(402, 'Usage limit exceeded');
    expect(retryableRefusal(usage)).toBe(usage);
  });
});
