// Helpers of the webhook suites: workflows with a webhook block, direct reads of the runs they started.
import { createHmac } from 'node:crypto';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, type TestServer, type TestResponse } from '../support/harness.js';

export const hook = (config: Record<string, unknown> = {}) => ({ id: 'hook', type: 'webhook', name: 'Webhook', config });
export const fnBlock = (id: string, code: string) => ({ id, type: 'function', name: id, config: { code } });

/** Creates (and deploys unless told not to) a workflow; returns its id and trigger URL. */
export async function webhookWorkflow(t: TestServer, definition: unknown, opts: { deploy?: boolean; name?: string } = {}) {
  const created = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: opts.name ?? `wh-${Math.random().toString(36).slice(2)}`, definition });
  if (created.status !== 201) throw new Error(`create failed ${created.status}: ${created.text}`);
  const id: string = created.body.data.workflow.id;
  let url = '';
  if (opts.deploy !== false) {
    const dep = await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    if (dep.status !== 200) throw new Error(`deploy failed ${dep.status}: ${dep.text}`);
    url = (await t.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow.webhookUrl;
  }
  return { id, url };
}

/**
 * A deployed `echo()` workflow in a workspace of its own on `plan` (its own limits and storage): the workspace,
 * its key, a caller of the API with that key, the workflow's id and its trigger URL.
 */
export async function webhookInNewWorkspace(t: TestServer, plan: string, name: string) {
  const ws = await createWorkspace(t.server.ctx.db, `wh-${name}-${Date.now()}`, t.userId, plan);
  const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
  const call = (method: string, path: string, body?: unknown) => request(t.url + path, method, body, { 'x-api-key': key.secret });
  const created = await call('POST', '/api/v1/workflows', { workspaceId: ws.id, name, definition: echo() });
  const wid: string = created.body.data.workflow.id;
  await call('POST', `/api/v1/workflows/${wid}/deploy`);
  const url: string = (await call('GET', `/api/v1/workflows/${wid}`)).body.data.workflow.webhookUrl;
  return { ws, key, call, wid, url };
}

/** A simple workflow: webhook -> function returning what `code` computes. */
export const echo = (config: Record<string, unknown> = {}, code = 'return { a: <webhook.a> ?? null }') => ({
  blocks: [hook(config), fnBlock('f', code)],
  edges: [{ from: 'hook', to: 'f' }],
});

export function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
  return request(url, 'POST', typeof body === 'string' ? body : JSON.stringify(body), { 'content-type': 'application/json', ...headers });
}

export async function runsOf(t: TestServer, workflowId: string): Promise<{ id: string; status: string; output: unknown; trigger: string }[]> {
  return t.server.ctx.db.query('SELECT id, status, output, trigger FROM executions WHERE workflow_id = $1 ORDER BY created_at', [workflowId]);
}

/** Waits until the workflow has `n` finished runs; returns them. */
export async function finishedRuns(t: TestServer, workflowId: string, n = 1, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const rows = await runsOf(t, workflowId);
    const done = rows.filter((r) => r.status === 'completed' || r.status === 'failed');
    if (done.length >= n) return done;
    if (Date.now() > until) throw new Error(`only ${done.length} of ${n} runs finished: ${JSON.stringify(rows)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const hmac = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('hex');
export const nowS = () => Math.floor(Date.now() / 1000);
