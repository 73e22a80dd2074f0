import type { TestServer } from './harness.js';

/** Creates and deploys a workflow over the API; returns its id. */
export async function deploy(t: TestServer, name: string, definition: unknown): Promise<string> {
  const created = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name, definition });
  if (created.status !== 201) throw new Error(`create failed ${created.status}: ${created.text}`);
  const id: string = created.body.data.workflow.id;
  const dep = await t.call('POST', `/api/v1/workflows/${id}/deploy`);
  if (dep.status !== 200) throw new Error(`deploy failed ${dep.status}: ${dep.text}`);
  return id;
}

/** Polls a job until it is completed or failed. */
export async function waitForJob(t: TestServer, jobId: string, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await t.call('GET', `/api/jobs/${jobId}`);
    if (r.body?.status === 'completed' || r.body?.status === 'failed') return r.body;
    if (Date.now() > deadline) throw new Error(`job ${jobId} still ${r.body?.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

export const start = (fields: { name: string; type: string; required?: boolean; default?: unknown }[] = []) => ({
  id: 'start', type: 'start', name: 'Start', config: { inputFormat: fields },
});

export const fn = (id: string, code: string, name = id) => ({ id, type: 'function', name, config: { code } });
