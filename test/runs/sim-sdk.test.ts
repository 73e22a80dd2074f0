// Sim's TypeScript SDK 0.1.2 (the npm package, unchanged) against a live Weft server: every method,
// as a client written for the reference service calls it.
import { SimStudioClient, SimStudioError } from 'simstudio-ts-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
let client: SimStudioClient;
let echoId: string;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
  client = new SimStudioClient({ apiKey: t.apiKey, baseUrl: `${t.url}/` });
  echoId = await deploy(t, 'sdk-echo', {
    blocks: [start([{ name: 'name', type: 'string', required: true }]), fn('greet', 'return { text: "hi " + <start.name> }', 'Greet')],
    edges: [{ from: 'start', to: 'greet' }],
  });
});
afterAll(async () => {
  await t?.close();
});

async function sdkError(p: Promise<unknown>): Promise<SimStudioError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SimStudioError);
    return err as SimStudioError;
  }
  throw new Error('expected a SimStudioError');
}

describe('simstudio-ts-sdk 0.1.2', () => {
  it('executeWorkflow and executeWorkflowSync run synchronously', async () => {
    const r = await client.executeWorkflow(echoId, { name: 'ada' });
    expect(r).toMatchObject({ success: true, output: { text: 'hi ada' } });
    expect('metadata' in r && typeof r.metadata?.duration).toBe('number');
    const s = await client.executeWorkflowSync(echoId, { name: 'bo' }, { timeout: 20_000 });
    expect(s).toMatchObject({ success: true, output: { text: 'hi bo' } });
    // No X-RateLimit-* headers on the legacy paths: the SDK keeps no rate-limit info, and the body carries the limits.
    expect(client.getRateLimitInfo()).toBeNull();
    expect((r as { limits?: unknown }).limits).toBeTruthy();
  });

  it('executeWorkflow async queues a job that getJobStatus follows to completion', async () => {
    const queued = await client.executeWorkflow(echoId, { name: 'cy' }, { async: true }) as unknown as Record<string, any>;
    expect(queued).toMatchObject({ success: true, async: true, status: 'queued', message: 'Workflow execution queued' });
    // The fields of 0.1.2's AsyncExecutionResult type, and the reference's own.
    expect(queued.taskId).toBe(queued.jobId);
    expect(queued.links.status).toBe(`${t.url}/api/jobs/${queued.jobId}`);
    expect(queued.statusUrl).toBe(queued.links.status);
    expect(Date.parse(queued.createdAt)).toBeGreaterThan(0);
    let status: any;
    for (let i = 0; i < 400; i++) {
      status = await client.getJobStatus(queued.taskId);
      if (status.status === 'completed' || status.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(status).toMatchObject({ success: true, taskId: queued.taskId, status: 'completed', output: { output: { text: 'hi cy' } } });
    expect(client.getRateLimitInfo()).toBeNull();
  });

  it('getWorkflowStatus and validateWorkflow', async () => {
    const st = await client.getWorkflowStatus(echoId);
    expect(st).toMatchObject({ isDeployed: true, needsRedeployment: false });
    expect(Date.parse(st.deployedAt ?? '')).toBeGreaterThan(0);
    expect(await client.validateWorkflow(echoId)).toBe(true);
    const draft = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'sdk-draft', definition: { blocks: [start()], edges: [] } });
    expect(await client.validateWorkflow(draft.body.data.workflow.id)).toBe(false);
    expect(await client.validateWorkflow('00000000-0000-4000-8000-000000000000')).toBe(false);
  });

  it('getUsageLimits', async () => {
    const u = await client.getUsageLimits();
    expect(u.success).toBe(true);
    for (const b of [u.rateLimit.sync, u.rateLimit.async]) {
      expect(b).toMatchObject({ isLimited: false, limit: expect.any(Number), remaining: expect.any(Number) });
      expect(Date.parse(b.resetAt)).toBeGreaterThan(0);
    }
    expect(u.rateLimit.authType).toBe('api');
    expect(u.usage).toMatchObject({ currentPeriodCost: expect.any(Number), limit: expect.any(Number), plan: 'enterprise' });
  });

  it('errors: message, code and status from the flat error bodies', async () => {
    const missing = await sdkError(client.executeWorkflow('00000000-0000-4000-8000-000000000000', {}));
    expect(missing).toMatchObject({ message: 'Workflow not found', status: 404 });
    const failing = await deploy(t, 'sdk-thrower', { blocks: [start(), fn('boom', 'throw new Error("kaput")', 'Boom')], edges: [{ from: 'start', to: 'boom' }] });
    const failed = await sdkError(client.executeWorkflow(failing, {}));
    expect(failed.status).toBe(500);
    expect(failed.message).toMatch(/kaput/);
    const job = await sdkError(client.getJobStatus('job_00000000-0000-4000-8000-000000000000'));
    expect(job).toMatchObject({ message: 'Task not found', code: 'TASK_NOT_FOUND', status: 404 });
    const status = await sdkError(client.getWorkflowStatus('00000000-0000-4000-8000-000000000000'));
    expect(status).toMatchObject({ message: 'Workflow not found', status: 404 });
    const wrongKey = new SimStudioClient({ apiKey: 'sk-weft-wrong', baseUrl: t.url });
    expect(await sdkError(wrongKey.getUsageLimits())).toMatchObject({ message: 'Invalid API key', status: 401 });
    expect(await sdkError(wrongKey.executeWorkflow(echoId, { name: 'x' }))).toMatchObject({ message: 'Invalid API key', status: 401 });
    // setApiKey / setBaseUrl switch the client over.
    wrongKey.setApiKey(t.apiKey);
    wrongKey.setBaseUrl(`${t.url}//`);
    expect(await wrongKey.validateWorkflow(echoId)).toBe(true);
  });

  it('a 429 is RATE_LIMIT_EXCEEDED, and executeWithRetry retries until the bucket refills', async () => {
    const s = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'free', WEFT_PLAN_LIMITS: JSON.stringify({ free: { syncPerMinute: 1 } }) } });
    try {
      const wf = await deploy(s, 'sdk-rl', { blocks: [start(), fn('f', 'return 1', 'F')], edges: [{ from: 'start', to: 'f' }] });
      const c = new SimStudioClient({ apiKey: s.apiKey, baseUrl: s.url });
      await c.executeWorkflow(wf, {});
      await c.executeWorkflow(wf, {});
      const refused = await sdkError(c.executeWorkflow(wf, {}));
      expect(refused).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', status: 429 });
      const gaveUp = await sdkError(c.executeWithRetry(wf, {}, {}, { maxRetries: 1, initialDelay: 5 }));
      expect(gaveUp.code).toBe('RATE_LIMIT_EXCEEDED');
      // The bucket refills (the limits clock moves a minute) while the SDK backs off: a later attempt succeeds.
      const retried = c.executeWithRetry(wf, {}, {}, { maxRetries: 8, initialDelay: 50, maxDelay: 400 });
      setTimeout(() => {
        s.server.services.limits.clock.offsetMs += 60_000;
      }, 100);
      expect(await retried).toMatchObject({ success: true, output: 1 });
    } finally {
      await s.close();
    }
  });
});
