// Webhook bodies are parsed by the webhooks area itself (raw bytes first, for signatures): the nesting
// limit the API applies to JSON holds there too, for every format that can nest, and form bodies (urlencoded
// and multipart) carry at most 10,000 fields.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { echo, post, runsOf, webhookWorkflow } from './support.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

describe('nesting limit on webhook bodies', () => {
  it('refuses JSON nested 10,000 levels deep with a 400 and starts no run, in both response modes', async () => {
    for (const responseMode of ['result', 'ack']) {
      const { id, url } = await webhookWorkflow(t, echo({ responseMode }));
      for (const body of [deep(10_000), deepObject(10_000), `{"a":${deep(65)}}`]) {
        const r = await post(url, body);
        expect(r.status).toBe(400);
        expect(r.text).toMatch(/nested more than 64 levels deep/);
      }
      expect(await runsOf(t, id)).toHaveLength(0);
      // 64 levels in all is accepted.
      expect((await post(url, `{"a":${deep(63)}}`)).status).toBe(200);
    }
  });

  it('refuses a deep JSON `payload` field of a form-encoded body', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ responseMode: 'result' }));
    const r = await request(url, 'POST', `payload=${encodeURIComponent(deep(10_000))}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.status).toBe(400);
    expect(r.text).toMatch(/nested more than 64 levels deep/);
    expect(await runsOf(t, id)).toHaveLength(0);
  });

  it('passes deep-looking text in multipart fields and plain form fields through as strings', async () => {
    const { url } = await webhookWorkflow(t, echo({ responseMode: 'result' }, 'return { len: String(<webhook.a>).length }'));
    const form = new FormData();
    form.append('a', deep(10_000));
    const m = await fetch(url, { method: 'POST', body: form });
    expect(m.status).toBe(200);
    expect(((await m.json()) as any).output).toEqual({ len: 20_000 });
    const f = await request(url, 'POST', `a=${encodeURIComponent(deep(10_000))}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(f.status).toBe(200);
    expect(f.body.output).toEqual({ len: 20_000 });
  });
});

describe('form fields of webhook bodies', () => {
  const code = 'return { n: <webhook.a>.length, first: <webhook.a>[0], last: <webhook.a>[<webhook.a>.length - 1], b: <webhook.b>, keys: Object.keys(<webhook>).filter((k) => k !== "headers" && k !== "query").sort() }';
  const fields = (n: number) => Array.from({ length: n }, (_, i) => `a=${i}`).join('&');

  it('collects a repeated name into an array in order, urlencoded and multipart, dropping __proto__ fields and files', async () => {
    const { url } = await webhookWorkflow(t, echo({ responseMode: 'result' }, code));
    const f = await request(url, 'POST', `${fields(9_998)}&b=x&__proto__=p`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(f.status).toBe(200);
    expect(f.body.output).toEqual({ n: 9_998, first: '0', last: '9997', b: 'x', keys: ['a', 'b'] });
    const form = new FormData();
    for (let i = 0; i < 9_997; i++) form.append('a', String(i));
    form.append('b', 'x');
    form.append('__proto__', 'p');
    form.append('__proto__', new Blob(['file']), 'f.txt');
    const m = await fetch(url, { method: 'POST', body: form });
    expect(m.status).toBe(200);
    expect(((await m.json()) as { output: unknown }).output).toEqual({ n: 9_997, first: '0', last: '9996', b: 'x', keys: ['a', 'b'] });
  });

  it('refuses a body of more than 10,000 fields with a 413 and starts no run', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ responseMode: 'result' }, code));
    const f = await request(url, 'POST', fields(10_001), { 'content-type': 'application/x-www-form-urlencoded' });
    expect(f.status).toBe(413);
    expect(f.text).toMatch(/at most 10000 fields/);
    const form = new FormData();
    for (let i = 0; i < 10_001; i++) form.append('a', String(i));
    const m = await fetch(url, { method: 'POST', body: form });
    expect(m.status).toBe(413);
    expect(await runsOf(t, id)).toHaveLength(0);
    // 10,000 is accepted.
    expect((await request(url, 'POST', fields(10_000), { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(200);
  });
});
