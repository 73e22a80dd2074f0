// A block output the databases cannot store (a NUL character, an unpaired surrogate, nesting past 1,000
// levels) fails its block with a clear error, and the run is recorded as failed (found by an audit: an http
// block's answer holding one made sync execute answer 500 "Internal server error" and left no log, after the
// run had done its work).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const oneBlock = (code: string) => ({ blocks: [start(), fn('f', code, 'F')], edges: [{ from: 'start', to: 'f' }] });
const nested = (levels: number) => `let v = 1; for (let i = 0; i < ${levels}; i++) v = [v]; return v`;

describe('an output the database cannot store', () => {
  it.each([
    ['a NUL character', 'return { a: "x" + String.fromCharCode(0) + "y" }', /cannot be stored: it holds a NUL character/],
    ['an unpaired surrogate', 'return { a: "x" + String.fromCharCode(0xd800) + "y" }', /cannot be stored: it holds an unpaired UTF-16 surrogate/],
    ['a key with a NUL character', 'const o = {}; o["k" + String.fromCharCode(0)] = 1; return o', /cannot be stored: it holds a NUL character/],
    ['nesting past 1,000 levels', nested(1001), /cannot be stored: it is nested more than 1000 levels deep/],
  ])('fails the block holding %s, and the run is logged as failed (sync and async)', async (_what, code, message) => {
    const id = await deploy(t, `unstorable-${Math.random()}`, oneBlock(code));
    const sync = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: {} });
    expect(sync.status, sync.text).toBe(500);
    expect(sync.body.success).toBe(false);
    expect(sync.body.error).toMatch(message);
    expect(sync.body.error).toMatch(/Block "F"/);
    const log = await t.call('GET', `/api/v1/logs/${sync.body.executionId}`);
    expect(log.status).toBe(200);
    expect(log.body.data.status).toBe('failed');

    const accepted = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: {}, async: true });
    expect(accepted.status).toBe(202);
    const job = await waitForJob(t, accepted.body.taskId);
    expect(job.status).toBe('failed');
    expect(JSON.stringify(job)).toMatch(message);
  });

  it('stores an output nested 1,000 levels deep, and text with paired surrogates and escapes', async () => {
    const deep = await deploy(t, 'storable-deep', oneBlock(nested(1000)));
    const r = await t.call('POST', `/api/workflows/${deep}/execute`, { inputs: {} });
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    let depth = 0;
    for (let v: unknown = r.body.output; Array.isArray(v); v = v[0]) depth++;
    expect(depth).toBe(1000);
    const text = await deploy(t, 'storable-text', oneBlock('return { s: "😀 \\"quoted\\" \\\\ tab\\t" + String.fromCharCode(1) + "x".repeat(300) }'));
    const s = await t.call('POST', `/api/workflows/${text}/execute`, { inputs: {} });
    expect(s.status, s.text).toBe(200);
    expect(s.body.output.s).toBe(`😀 "quoted" \\ tab\t\u0001${'x'.repeat(300)}`);
    const log = await t.call('GET', `/api/v1/logs/${s.body.executionId}`);
    expect(log.body.data.output).toEqual(s.body.output);
  });
});

describe('a result the database refuses for any other reason', () => {
  // Fault injection: a trigger that refuses one run's final write the way a storage error would. The run is
  // then recorded and answered as failed without its output, rather than a bare 500 with no log row.
  it('records the sync run as failed, with a log row and an answer saying so', async () => {
    const db = t.server.ctx.db;
    const marker = `refused-${Math.random().toString(36).slice(2)}`;
    await db.query(`CREATE OR REPLACE FUNCTION weft_test_refuse_result() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.output::text LIKE '%${marker}%' THEN RAISE EXCEPTION 'value too long for the test'; END IF;
        RETURN NEW;
      END $$`);
    await db.query('CREATE TRIGGER weft_test_refuse_result BEFORE INSERT OR UPDATE ON executions FOR EACH ROW EXECUTE FUNCTION weft_test_refuse_result()');
    try {
      // The workflow's name must not hold the marker: the log names its workflow.
      const id = await deploy(t, `refused-${Math.random().toString(36).slice(2)}`, oneBlock(`return { tag: "${marker}" }`));
      const r = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: {} });
      expect(r.status, r.text).toBe(500);
      expect(r.body).toMatchObject({ success: false, error: 'The run ended but its result could not be stored; it is recorded as failed without its output' });
      expect(r.body.executionId).toEqual(expect.any(String));
      const log = await t.call('GET', `/api/v1/logs/${r.body.executionId}`);
      expect(log.status, log.text).toBe(200);
      expect(log.body.data.status).toBe('failed');
      expect(JSON.stringify(log.body.data)).not.toContain(marker);
      // Other runs of the server are unaffected.
      const fine = await deploy(t, `fine-${marker}`, oneBlock('return { ok: true }'));
      const ok = await t.call('POST', `/api/workflows/${fine}/execute`, { inputs: {} });
      expect(ok.status, ok.text).toBe(200);
    } finally {
      await db.query('DROP TRIGGER IF EXISTS weft_test_refuse_result ON executions');
    }
  });
});
