// Provider presets: signatures over the raw body (valid, invalid, expired) and verification challenges.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { echo, finishedRuns, hmac, nowS, post, runsOf, webhookWorkflow } from './support.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const SECRET = 'whsec_test_secret';

describe('signatures', () => {
  it('github: X-Hub-Signature-256 over the raw body', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'github', secret: SECRET }));
    const body = '{"a": 1,  "zen":"spaces kept"}';
    const ok = await post(url, body, { 'x-hub-signature-256': `sha256=${hmac(SECRET, body)}`, 'x-github-delivery': 'gh-1', 'x-github-event': 'push' });
    expect(ok.status).toBe(200);
    const bad = await post(url, body, { 'x-hub-signature-256': `sha256=${hmac('other', body)}`, 'x-github-delivery': 'gh-2' });
    expect(bad.status).toBe(401);
    expect((await post(url, body, { 'x-github-delivery': 'gh-3' })).status).toBe(401);
    expect((await finishedRuns(t, id)).length).toBe(1);
  });

  it('stripe: Stripe-Signature with its 300 s timestamp tolerance', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'stripe', secret: SECRET }));
    const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'charge.succeeded', a: 5 });
    const sign = (ts: number, secret = SECRET) => `t=${ts},v1=${hmac(secret, `${ts}.${body}`)}`;
    expect((await post(url, body, { 'stripe-signature': sign(nowS()) })).status).toBe(200);
    expect((await post(url, body, { 'stripe-signature': sign(nowS(), 'nope') })).status).toBe(401);
    const expired = await post(url, body, { 'stripe-signature': sign(nowS() - 301) });
    expect(expired.status).toBe(401);
    expect(expired.text).toMatch(/tolerance/);
    expect((await finishedRuns(t, id)).length).toBe(1);
  });

  it('slack: signing secret over v0:timestamp:body; url_verification answered without a run', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'slack', secret: SECRET }));
    const headers = (body: string, ts = nowS(), secret = SECRET) => ({
      'x-slack-request-timestamp': String(ts), 'x-slack-signature': `v0=${hmac(secret, `v0:${ts}:${body}`)}`,
    });
    const challenge = JSON.stringify({ type: 'url_verification', challenge: 'abc123' });
    const c = await post(url, challenge, headers(challenge));
    expect(c.status).toBe(200);
    expect(c.body).toEqual({ challenge: 'abc123' });
    expect((await post(url, challenge, headers(challenge, nowS(), 'bad'))).status).toBe(401);
    const body = JSON.stringify({ type: 'event_callback', event_id: 'Ev1', a: 3 });
    expect((await post(url, body, headers(body))).status).toBe(200);
    expect((await post(url, body, headers(body, nowS(), 'bad'))).status).toBe(401);
    expect((await post(url, body, headers(body, nowS() - 400))).status).toBe(401);
    const runs = await finishedRuns(t, id);
    expect(runs).toHaveLength(1);
    expect(runs[0].output).toEqual({ a: 3 });
  });
});

describe('verification challenges', () => {
  it('microsoft: validationToken echoed as text, no run', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'microsoft' }));
    const r = await request(`${url}?validationToken=${encodeURIComponent('tok <1>')}`, 'POST');
    expect(r.status).toBe(200);
    expect(r.text).toBe('tok <1>');
    expect(r.headers.get('content-type')).toMatch(/text\/plain/);
    const g = await request(`${url}?validationToken=v2`, 'GET');
    expect(g.text).toBe('v2');
    expect(await runsOf(t, id)).toHaveLength(0);
  });

  it('meta: GET hub.challenge with the verify token; otherwise GET is 405', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'meta', token: 'verify-me' }));
    const ok = await request(`${url}?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444`, 'GET');
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('1158201444');
    const bad = await request(`${url}?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1`, 'GET');
    expect(bad.status).toBe(403);
    expect((await request(url, 'GET')).status).toBe(405);
    expect(await runsOf(t, id)).toHaveLength(0);
  });

  it('generic: GET is 405 with Allow: POST', async () => {
    const { url } = await webhookWorkflow(t, echo());
    const r = await request(`${url}?hub.challenge=1&validationToken=2`, 'GET');
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
  });
});

describe('replayed signed deliveries', () => {
  // Unsigned headers and the query string are free for anyone who captured a delivery to change.
  const replays = (i: number) => ({ 'idempotency-key': `replay-${i}`, 'x-github-delivery': `gh-replay-${i}`, 'webhook-id': `msg-${i}` });

  it('stripe: one signed event posted 5 times with new delivery headers and queries starts one run', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'stripe', secret: SECRET }));
    const body = JSON.stringify({ id: 'evt_replayed', object: 'event', type: 'charge.succeeded', a: 1 });
    const ts = nowS();
    const signature = `t=${ts},v1=${hmac(SECRET, `${ts}.${body}`)}`;
    for (let i = 0; i < 5; i++) {
      expect((await post(`${url}?replay=${i}`, body, { 'stripe-signature': signature, ...replays(i) })).status).toBe(200);
    }
    await finishedRuns(t, id);
    // A Stripe retry of the same event (a new signature timestamp) is the same delivery too.
    const later = ts + 1;
    expect((await post(url, body, { 'stripe-signature': `t=${later},v1=${hmac(SECRET, `${later}.${body}`)}` })).status).toBe(200);
    expect(await runsOf(t, id)).toHaveLength(1);
  });

  it('github: the delivery header is unsigned, so the signed body is the key', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'github', secret: SECRET, responseMode: 'result' }, 'return { a: <webhook.a>, n: Math.random() }'));
    const body = JSON.stringify({ a: 2, after: 'c0ffee' });
    const answers = [];
    for (let i = 0; i < 5; i++) {
      const r = await post(`${url}?replay=${i}`, body, { 'x-hub-signature-256': `sha256=${hmac(SECRET, body)}`, ...replays(i) });
      expect(r.status).toBe(200);
      answers.push(r.body.output.n);
    }
    expect(new Set(answers).size).toBe(1);
    expect(await runsOf(t, id)).toHaveLength(1);
    // A different signed event is a new delivery.
    const other = JSON.stringify({ a: 3, after: 'beef' });
    expect((await post(url, other, { 'x-hub-signature-256': `sha256=${hmac(SECRET, other)}` })).status).toBe(200);
    expect(await runsOf(t, id)).toHaveLength(2);
  });

  it('slack: the signed event_id is the key', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ provider: 'slack', secret: SECRET }));
    const body = JSON.stringify({ type: 'event_callback', event_id: 'EvReplay', a: 4 });
    const ts = nowS();
    const signature = `v0=${hmac(SECRET, `v0:${ts}:${body}`)}`;
    for (let i = 0; i < 5; i++) {
      const r = await post(`${url}?replay=${i}`, body, { 'x-slack-request-timestamp': String(ts), 'x-slack-signature': signature, ...replays(i) });
      expect(r.status).toBe(200);
    }
    // An accepted delivery's run row is committed before its answer: none can appear later.
    expect(await runsOf(t, id)).toHaveLength(1);
  });
});
