// Resumes from the page and the API are the same use case; links use one public base in every mode.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

const approval = {
  blocks: [
    start([{ name: 'item', type: 'string' }]),
    { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Approve?', fields: [{ name: 'decision', type: 'string', required: true }] } },
    fn('after', 'return { decision: <approval.decision> }', 'After'),
  ],
  edges: [{ from: 'start', to: 'approval' }, { from: 'approval', to: 'after' }],
};

const form = (fields: Record<string, string>) => ({ body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

/** A POST whose Host header differs from the address it is sent to. */
function postWithHost(url: string, host: string, body: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { host, 'content-type': 'application/json', 'x-api-key': t.apiKey } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function usageCost(): Promise<number> {
  const r = await t.call('GET', '/api/users/me/usage-limits');
  return r.body.usage.currentPeriodCost;
}

describe('resuming', () => {
  it('from the resume page writes the resumed execution\'s row and charges it, like the API', async () => {
    const wf = await deploy(t, 'page-resume', approval);
    const run = await t.call('POST', `/api/workflows/${wf}/execute`, { item: 'chair' });
    const exec = run.body.executionId;
    const costBefore = await usageCost();
    const f = form({ apiKey: t.apiKey, decision: 'approved' });
    const page = await request(`${t.url}/resume/${wf}/${exec}/approval`, 'POST', f.body, f.headers);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Answer received');
    // The page shows no cached copy and cannot be framed.
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");

    const record = await t.call('GET', `/api/resume/${wf}/${exec}`);
    const entry = record.body.queue[0];
    expect(entry.status).toBe('completed');
    const resumedLog = await t.call('GET', `/api/v1/logs/${entry.newExecutionId}`);
    expect(resumedLog.status).toBe(200);
    expect(resumedLog.body.data).toMatchObject({ status: 'completed', trigger: 'resume' });
    expect(await usageCost()).toBeGreaterThan(costBefore);
  });

  it('hands out links on the request\'s host for async runs too', async () => {
    const wf = await deploy(t, 'async-links', approval);
    // The request names another host (as behind a proxy): the links must follow it, not the bind address.
    const host = 'http://weft.example.test:8443';
    const q = await postWithHost(`${t.url}/api/workflows/${wf}/execute`, 'weft.example.test:8443', { item: 'lamp', async: true });
    expect(q.status).toBe(202);
    expect(q.body.statusUrl.startsWith(`${host}/api/jobs/`)).toBe(true);
    let job: any;
    for (let i = 0; i < 200; i++) {
      job = (await t.call('GET', `/api/jobs/${q.body.jobId}`)).body;
      if (job.paused) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(job.paused).toBe(true);
    expect(job.pause.data._resume.apiUrl.startsWith(`${host}/api/resume/${wf}/`)).toBe(true);
    expect(job.pause.data._resume.uiUrl.startsWith(`${host}/resume/${wf}/`)).toBe(true);
  });
});
