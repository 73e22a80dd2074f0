// Exactly once per delivery: concurrent duplicates, later duplicates, takeover of an abandoned claim,
// rate limits and usage charging.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { echo, finishedRuns, post, runsOf, webhookInNewWorkspace, webhookWorkflow } from './support.js';

let t: TestServer;
const tiny = JSON.stringify({ free: { syncPerMinute: 2, asyncPerMinute: 2, apiPerMinute: 100 }, team: { storageBytes: 3000 }, pro: { usageLimitUsd: 0.0001 } });
beforeAll(async () => {
  // The default claim lease (30 s): with a short one, a renewal delayed on a loaded machine let a duplicate
  // take a live claim over and answer 409. The takeover tests below expire their leases themselves.
  t = await startTestServer({ env: { WEFT_PLAN_LIMITS: tiny } });
});
afterAll(async () => {
  await t?.close();
});

describe('exactly once per delivery', () => {
  it('20 concurrent identical deliveries start one run and all get the same answer', async () => {
    const { id, url } = await webhookWorkflow(t, echo({}, 'const e = Date.now() + 100; while (Date.now() < e) { /* busy */ } return { a: <webhook.a> }'));
    const all = await Promise.all(Array.from({ length: 20 }, () => post(url, { a: 7 })));
    expect(all.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(all.map((r) => r.text)).size).toBe(1);
    const [run] = await finishedRuns(t, id);
    expect(run).toMatchObject({ status: 'completed', output: { a: 7 } });
    await new Promise((r) => setTimeout(r, 200));
    expect(await runsOf(t, id)).toHaveLength(1);
  });

  it('result mode: concurrent duplicates and a later one get the first run\'s output; one run', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ responseMode: 'result' }, 'const e = Date.now() + 150; while (Date.now() < e) { /* busy */ } return { n: Math.random() }'));
    const all = await Promise.all(Array.from({ length: 20 }, () => post(url, { a: 1 }, { 'x-github-delivery': 'res-1' })));
    expect(all.map((r) => `${r.status} ${r.status === 200 ? "" : r.text}`)).toEqual(Array(20).fill("200 "));
    const n = all[0].body.output.n;
    expect(all.every((r) => r.body.output.n === n)).toBe(true);
    const later = await post(url, { a: 'different body, same delivery' }, { 'x-github-delivery': 'res-1' });
    expect(later.body.output.n).toBe(n);
    // The same bytes, not just the same value.
    expect(new Set([...all, later].map((r) => r.text)).size).toBe(1);
    expect(await runsOf(t, id)).toHaveLength(1);
  });

  it('a duplicate after completion starts no run; keys come from headers, the idempotency field or the body hash', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ idempotencyField: 'order.id' }));
    expect((await post(url, { a: 1 }, { 'webhook-id': 'msg_1' })).status).toBe(200);
    await finishedRuns(t, id, 1);
    expect((await post(url, { a: 2 }, { 'webhook-id': 'msg_1' })).body).toEqual({ message: 'Webhook processed' });
    expect((await post(url, { a: 3, order: { id: 'o-1' } })).status).toBe(200);
    expect((await post(url, { a: 4, order: { id: 'o-1' } })).status).toBe(200);
    expect((await post(url, { a: 5 })).status).toBe(200);
    expect((await post(url, { a: 5 })).status).toBe(200);
    expect((await post(url, { a: 6 })).status).toBe(200);
    await finishedRuns(t, id, 4);
    await new Promise((r) => setTimeout(r, 300));
    const outputs = (await runsOf(t, id)).map((r) => (r.output as { a: number }).a).sort();
    expect(outputs).toEqual([1, 3, 5, 6]);
  });

  it('keys are scoped to the workspace and workflow: the same delivery id elsewhere runs', async () => {
    const one = await webhookWorkflow(t, echo());
    const two = await webhookWorkflow(t, echo());
    await post(one.url, { a: 1 }, { 'x-github-delivery': 'shared' });
    await post(two.url, { a: 1 }, { 'x-github-delivery': 'shared' });
    await finishedRuns(t, one.id);
    await finishedRuns(t, two.id);
  });

  it('a claim whose process died (lease expired, no answer) is taken over by the retry', async () => {
    const { id, url } = await webhookWorkflow(t, echo());
    // What a process that crashed right after claiming leaves behind.
    await t.server.ctx.db.query(
      `INSERT INTO webhook_deliveries (workspace_id, delivery_key, workflow_id, claim_token, lease_until)
       VALUES ($1, $2, $3, 'dead-process', now() + interval '300 milliseconds')`,
      [t.workspaceId, `${id}:h:x-github-delivery:crash-1`, id]);
    const started = Date.now();
    const r = await post(url, { a: 9 }, { 'x-github-delivery': 'crash-1' });
    expect(r.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    const [run] = await finishedRuns(t, id);
    expect(run.output).toEqual({ a: 9 });
  });

  it('a takeover after the dead process had queued the run finds that run instead of starting another', async () => {
    const { id, url } = await webhookWorkflow(t, echo({}, 'const e = Date.now() + 100; while (Date.now() < e) { /* busy */ } return { a: <webhook.a> }'));
    expect((await post(url, { a: 1 }, { 'x-github-delivery': 'queued-1' })).status).toBe(200);
    await finishedRuns(t, id);
    // As if the answer had never been stored and the lease lapsed.
    await t.server.ctx.db.query(`UPDATE webhook_deliveries SET answer = NULL, lease_until = now() - interval '1 second' WHERE workflow_id = $1`, [id]);
    expect((await post(url, { a: 1 }, { 'x-github-delivery': 'queued-1' })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect(await runsOf(t, id)).toHaveLength(1);
  });

  it('a delivery past the retention runs again', async () => {
    const { id, url } = await webhookWorkflow(t, echo());
    await post(url, { a: 1 }, { 'x-github-delivery': 'old-1' });
    await finishedRuns(t, id);
    await t.server.ctx.db.query(`UPDATE webhook_deliveries SET created_at = now() - interval '8 days' WHERE workflow_id = $1`, [id]);
    await post(url, { a: 1 }, { 'x-github-delivery': 'old-1' });
    await finishedRuns(t, id, 2);
  });
});

describe('limits and usage', () => {
  it('rate limits per workflow and billed account (429 + Retry-After), charges each run to the workspace', async () => {
    const { ws, call, wid, url } = await webhookInNewWorkspace(t, 'free', 'limited');
    const statuses: number[] = [];
    let refused;
    for (let i = 0; i < 5; i++) {
      const r = await post(url, { a: i });
      statuses.push(r.status);
      if (r.status === 429) refused = r;
    }
    // asyncPerMinute 2 -> burst 4.
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A refused delivery keeps no claim: its retry is not a duplicate.
    expect((await t.server.ctx.db.query('SELECT 1 FROM webhook_deliveries WHERE workflow_id = $1', [wid]))).toHaveLength(4);
    await finishedRuns(t, wid, 4);
    const usage = await t.server.ctx.db.query<{ account: string; n: number }>(
      `SELECT billed_account AS account, count(*)::int AS n FROM executions WHERE workflow_id = $1 GROUP BY billed_account`, [wid]);
    expect(usage).toEqual([{ account: `workspace:${ws.id}`, n: 4 }]);
    const limits = await call('GET', '/api/users/me/usage-limits');
    expect(limits.body.usage.currentPeriodCost).toBeGreaterThan(0);
  });
});

describe('files', () => {
  const upload = (url: string, parts: Record<string, string | Blob>, headers: Record<string, string> = {}) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(parts)) {
      if (typeof v === 'string') form.append(k, v);
      else form.append(k, v, `${k}.txt`);
    }
    return fetch(url, { method: 'POST', body: form, headers });
  };

  it('stores multipart files, passes file objects, counts them toward storage and serves them to the workspace', async () => {
    const def = echo({ inputFormat: [{ name: 'doc', type: 'files' }, { name: 'note', type: 'string' }], responseMode: 'result' },
      'return { name: <webhook.doc>[0].name, size: <webhook.doc>[0].size, type: <webhook.doc>[0].type, url: <webhook.doc>[0].url, note: <webhook.note> }');
    const { url } = await webhookWorkflow(t, def);
    const before = await t.server.services.limits.storage.used(t.server.ctx.db, [t.workspaceId]);
    const res = await upload(url, { note: 'hi', doc: new Blob(['hello file'], { type: 'text/plain' }) });
    expect(res.status).toBe(200);
    const out = ((await res.json()) as any).output;
    expect(out).toMatchObject({ name: 'doc.txt', size: 10, type: 'text/plain', note: 'hi' });
    expect(await t.server.services.limits.storage.used(t.server.ctx.db, [t.workspaceId])).toBe(before + 10);
    const path = new URL(out.url).pathname;
    const file = await fetch(`${t.url}${path}`, { headers: { 'x-api-key': t.apiKey } });
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('hello file');
    expect((await fetch(`${t.url}${path}`)).status).toBe(401);
    // A duplicate stores nothing more.
    expect((await upload(url, { note: 'x', doc: new Blob(['hello file']) }, { 'idempotency-key': 'f-1' })).status).toBe(200);
    expect((await upload(url, { note: 'x', doc: new Blob(['hello file']) }, { 'idempotency-key': 'f-1' })).status).toBe(200);
    expect(await t.server.services.limits.storage.used(t.server.ctx.db, [t.workspaceId])).toBe(before + 20);
  });

  it('refuses files over the workspace storage (403), with no run and no claim kept', async () => {
    const { wid, url } = await webhookInNewWorkspace(t, 'team', 'files');
    const r = await upload(url, { doc: new Blob(['x'.repeat(4000)]) });
    expect(r.status).toBe(403);
    expect(await runsOf(t, wid)).toHaveLength(0);
    expect(await t.server.ctx.db.query('SELECT 1 FROM webhook_deliveries WHERE workflow_id = $1', [wid])).toHaveLength(0);
    expect(await t.server.ctx.db.query('SELECT 1 FROM webhook_files WHERE workflow_id = $1', [wid])).toHaveLength(0);
    expect((await upload(url, { doc: new Blob(['small']) })).status).toBe(200);
    await finishedRuns(t, wid);
  });

  it('keeps none of the files of a delivery refused at admission (402 past the usage cap), however often it is retried', async () => {
    const { ws, wid, url } = await webhookInNewWorkspace(t, 'pro', 'capped');
    // What the workspace stores before: the workflow itself, its draft and deployed version.
    const stored = await t.server.services.limits.storage.used(t.server.ctx.db, [ws.id]);
    for (let i = 0; i < 3; i++) expect((await upload(url, { doc: new Blob(['y'.repeat(1000)]) })).status).toBe(402);
    expect(await runsOf(t, wid)).toHaveLength(0);
    expect(await t.server.ctx.db.query('SELECT 1 FROM webhook_files WHERE workflow_id = $1', [wid])).toHaveLength(0);
    expect(await t.server.services.limits.storage.used(t.server.ctx.db, [ws.id])).toBe(stored);
  });
});
