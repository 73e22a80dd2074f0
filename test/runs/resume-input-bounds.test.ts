// Resume input is bounded on every resume path (the API, the v2 run API and the resume page): members the
// pause's form does not declare are dropped, the input is refused over 64 KiB of JSON (or the block output cap
// when lower), and a refused resume writes nothing and leaves the pause resumable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestResponse, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

const CAP = 64 * 1024;
const TOO_LARGE = /^Resume input is too large: (\d+ bytes|more than \d+ bytes) of JSON, over the limit of (\d+) bytes$/;

const approval = {
  blocks: [
    start(),
    { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Approve?', fields: [{ name: 'decision', type: 'string', required: true }, { name: 'comment', type: 'string' }] } },
    fn('after', 'return { decision: <approval.decision>, comment: <approval.comment> }', 'After'),
  ],
  edges: [{ from: 'start', to: 'approval' }, { from: 'approval', to: 'after' }],
};
/** An approval with no form: the resume itself is the answer. */
const bare = {
  blocks: [start(), { id: 'gate', type: 'human', name: 'Gate', config: { message: 'Go on?' } }, fn('after', 'return { note: <gate.note> }', 'After')],
  edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'after' }],
};

const form = (fields: Record<string, string>) => ({ body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
const apiResume = (wf: string, exec: string, ctx: string, body: unknown) => t.call('POST', `/api/resume/${wf}/${exec}/${ctx}`, body);
const v2Resume = (wf: string, exec: string, body: unknown) => t.call('POST', `/api/v2/workflows/${wf}/runs/${exec}/resume`, body);
const pageResume = (wf: string, exec: string, ctx: string, fields: Record<string, string>) => {
  const f = form({ apiKey: t.apiKey, ...fields });
  return request(`${t.url}/resume/${wf}/${exec}/${ctx}`, 'POST', f.body, f.headers);
};

async function paused(wf: string): Promise<string> {
  const run = await t.call('POST', `/api/workflows/${wf}/execute`, {});
  expect(run.status).toBe(200);
  expect(run.body.output.data.operation).toBe('human');
  return run.body.executionId;
}

const record = async (wf: string, exec: string) => {
  const r = await t.call('GET', `/api/resume/${wf}/${exec}`);
  expect(r.status).toBe(200);
  return r.body;
};

/** The pause record as a refused resume must leave it: nothing queued, the point still open. */
async function expectUntouched(wf: string, exec: string, before: any) {
  const after = await record(wf, exec);
  expect(after.queue).toEqual([]);
  expect(after.status).toBe('paused');
  expect(after.resumedCount).toBe(0);
  expect(after.pausePoints[0].resumeStatus).toBe('paused');
  expect(after.updatedAt).toBe(before.updatedAt);
  expect(after.executionSnapshot).toEqual(before.executionSnapshot);
}

/** The v1 refusal: 400 `{error, details}`, the detail naming the input and the cap. */
function expectTooLarge(r: TestResponse, limit = CAP) {
  expect(r.status).toBe(400);
  expect(r.body.error).toMatch(TOO_LARGE);
  expect(Number(TOO_LARGE.exec(r.body.error)?.[2])).toBe(limit);
  expect(r.body.details).toEqual([{ code: 'too_big', path: ['input'], maximum: limit, message: r.body.error }]);
}

describe('resume input bounds', () => {
  it('API: drops members the form does not declare; only the form\'s answer is stored', async () => {
    const wf = await deploy(t, 'bounds-api-extra', approval);
    const exec = await paused(wf);
    const r = await apiResume(wf, exec, 'approval', { input: { decision: 'yes', comment: 'fine', junk: 'j'.repeat(4000), nested: { a: [1, 2] } } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, status: 'completed', output: { decision: 'yes', comment: 'fine' } });
    const rec = await record(wf, exec);
    expect(rec.queue).toHaveLength(1);
    expect(rec.queue[0].resumeInput).toEqual({ decision: 'yes', comment: 'fine' });
    expect(rec.executionSnapshot.snapshot).not.toContain('junk');
    expect(rec.executionSnapshot.snapshot).not.toContain('nested');
    const log = await t.call('GET', `/api/v1/logs/${rec.queue[0].newExecutionId}`);
    expect(log.status).toBe(200);
    expect(JSON.stringify(log.body)).not.toContain('jjjj');
  });

  it('API: refuses an input over 64 KiB with 400 naming the cap, writes nothing, and the pause stays resumable', async () => {
    const wf = await deploy(t, 'bounds-api-size', approval);
    const exec = await paused(wf);
    const before = await record(wf, exec);
    // A declared field over the cap, an undeclared one far over it (the audit's 9 MiB), and a body with no `input` key.
    const declared = await apiResume(wf, exec, 'approval', { input: { decision: 'yes', comment: 'c'.repeat(CAP) } });
    expectTooLarge(declared);
    expect(declared.body.error).toMatch(/^Resume input is too large: \d+ bytes of JSON/);
    const huge = await apiResume(wf, exec, 'approval', { input: { decision: 'yes', junk: 'x'.repeat(9 * 1024 * 1024) } });
    expectTooLarge(huge);
    expect(huge.body.error).toMatch(/more than \d+ bytes/);
    expectTooLarge(await apiResume(wf, exec, 'approval', { decision: 'yes', junk: 'x'.repeat(CAP) }));
    await expectUntouched(wf, exec, before);

    const ok = await apiResume(wf, exec, 'approval', { input: { decision: 'yes', comment: 'c'.repeat(1000) } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'completed', output: { decision: 'yes', comment: 'c'.repeat(1000) } });
    expect((await record(wf, exec)).queue.map((e: { status: string }) => e.status)).toEqual(['completed']);
  });

  it('API: a pause with no form fields takes any object, within the same cap', async () => {
    const wf = await deploy(t, 'bounds-api-bare', bare);
    const exec = await paused(wf);
    const before = await record(wf, exec);
    expectTooLarge(await apiResume(wf, exec, 'gate', { input: { note: 'n'.repeat(CAP) } }));
    await expectUntouched(wf, exec, before);
    const ok = await apiResume(wf, exec, 'gate', { input: { note: 'looks right' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'completed', output: { note: 'looks right' } });
    expect((await record(wf, exec)).queue[0].resumeInput).toEqual({ note: 'looks right' });
  });

  it('v2: drops undeclared members and refuses an oversized input with 400 BAD_REQUEST; the run stays resumable', async () => {
    const wf = await deploy(t, 'bounds-v2', approval);
    const exec = await paused(wf);
    const before = await record(wf, exec);
    for (const input of [{ decision: 'yes', comment: 'c'.repeat(CAP) }, { decision: 'yes', junk: 'x'.repeat(9 * 1024 * 1024) }]) {
      const r = await v2Resume(wf, exec, { contextId: 'approval', input });
      expect(r.status).toBe(400);
      expect(r.headers.get('cache-control')).toBe('private, no-store');
      expect(r.body.error.code).toBe('BAD_REQUEST');
      expect(r.body.error.message).toMatch(TOO_LARGE);
      expect(r.body.error.details).toEqual([{ code: 'too_big', path: ['input'], maximum: CAP, message: r.body.error.message }]);
    }
    await expectUntouched(wf, exec, before);

    const ok = await v2Resume(wf, exec, { contextId: 'approval', input: { decision: 'yes', junk: 'j'.repeat(4000) } });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ status: 'completed', output: { decision: 'yes' } });
    const rec = await record(wf, exec);
    expect(rec.queue[0].resumeInput).toEqual({ decision: 'yes' });
    expect(rec.executionSnapshot.snapshot).not.toContain('junk');
  });

  it('page: drops undeclared form fields and refuses an oversized answer with a 400 page; the form can be sent again', async () => {
    const wf = await deploy(t, 'bounds-page', approval);
    const exec = await paused(wf);
    const before = await record(wf, exec);
    const big = await pageResume(wf, exec, 'approval', { decision: 'yes', comment: 'c'.repeat(CAP) });
    expect(big.status).toBe(400);
    expect(big.headers.get('content-type')).toContain('text/html');
    expect(big.text).toContain('Could not resume');
    expect(big.text).toMatch(/Resume input is too large: \d+ bytes of JSON, over the limit of 65536 bytes/);
    const junk = await pageResume(wf, exec, 'approval', { decision: 'yes', junk: 'x'.repeat(2 * 1024 * 1024) });
    expect(junk.status).toBe(400);
    expect(junk.text).toMatch(/Resume input is too large: more than \d+ bytes of JSON, over the limit of 65536 bytes/);
    await expectUntouched(wf, exec, before);

    const ok = await pageResume(wf, exec, 'approval', { decision: 'yes', comment: 'ok', junk: 'j'.repeat(4000) });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('Answer received');
    const rec = await record(wf, exec);
    expect(rec.queue[0]).toMatchObject({ status: 'completed', resumeInput: { decision: 'yes', comment: 'ok' } });
    expect(Object.keys(rec.queue[0].resumeInput).sort()).toEqual(['comment', 'decision']);
  });
});

describe('resume input bounds under a lower block output cap', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise', WEFT_MAX_BLOCK_OUTPUT_BYTES: '2048' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('caps the input at WEFT_MAX_BLOCK_OUTPUT_BYTES when that is lower than 64 KiB (the input is the block\'s output)', async () => {
    const wf = await deploy(s, 'bounds-low-cap', approval);
    const exec = (await s.call('POST', `/api/workflows/${wf}/execute`, {})).body.executionId;
    const r = await s.call('POST', `/api/resume/${wf}/${exec}/approval`, { input: { decision: 'yes', comment: 'c'.repeat(3000) } });
    expectTooLarge(r, 2048);
    const ok = await s.call('POST', `/api/resume/${wf}/${exec}/approval`, { input: { decision: 'yes', comment: 'c'.repeat(1000) } });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('completed');
  });
});
