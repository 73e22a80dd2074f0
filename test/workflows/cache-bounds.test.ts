// The workflow service's caches hold a bounded amount whatever the drafts: execute of an undeployed
// workflow caches its row without the draft (the audit filled the heap with cached rows of 9 MB drafts),
// and draft runs of many distinct large drafts keep versions and compiled graphs within their byte bounds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { WORKFLOW_CACHE_BOUNDS } from '../../src/workflows/service.js';
import { fn, start } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

/** A valid draft of about `bytes` bytes of JSON (in its description), distinct per `i`. */
const big = (i: number, bytes: number) => ({
  blocks: [start(), fn('f', `return ${i}`, 'F')], edges: [{ from: 'start', to: 'f' }], description: `${i}`.padEnd(bytes, 'x'),
});

describe('workflow caches', () => {
  it('stay within their byte bounds after executes and draft runs of many distinct large drafts', async () => {
    const drafts = 18;
    const draftBytes = 2_000_000;
    // More than a version cache's worth of drafts, so the byte bound is what keeps it.
    expect(drafts * draftBytes).toBeGreaterThan(WORKFLOW_CACHE_BOUNDS.versions.maxBytes);
    const ids: string[] = [];
    for (let i = 0; i < drafts; i++) {
      const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: `big-${i}`, definition: big(i, draftBytes) });
      expect(c.status).toBe(201);
      ids.push(c.body.data.workflow.id);
    }
    const workflows = t.server.services.workflows;

    // Executes of the undeployed workflows: refused, and each row is cached without its draft.
    for (const id of ids) expect((await t.call('POST', `/api/workflows/${id}/execute`, { inputs: {} })).status).toBe(403);
    const rows = workflows.cacheSizes().rows;
    expect(rows.entries).toBeGreaterThanOrEqual(drafts);
    expect(rows.bytes).toBeLessThan(rows.entries * 2_000);

    // Draft runs: each distinct draft is a snapshot version and a compiled graph, kept within the bounds.
    for (const [i, id] of ids.entries()) {
      const r = await request(`${t.url}/api/workflows/${id}/execute`, 'POST', { useDraftState: true, inputs: {} }, { 'x-api-key': t.apiKey });
      expect(r.status).toBe(200);
      expect(r.body.output).toBe(i);
    }
    const { versions, compiled } = workflows.cacheSizes();
    expect(versions.bytes).toBeLessThanOrEqual(WORKFLOW_CACHE_BOUNDS.versions.maxBytes);
    expect(versions.entries).toBeLessThan(drafts);
    expect(versions.bytes).toBeGreaterThan(draftBytes * (versions.entries - 1));
    expect(compiled.bytes).toBeLessThanOrEqual(WORKFLOW_CACHE_BOUNDS.compiled.maxBytes);
    expect(compiled.entries).toBeLessThan(drafts);

    // An evicted snapshot is read again when its draft runs again.
    const again = await request(`${t.url}/api/workflows/${ids[0]}/execute`, 'POST', { useDraftState: true, inputs: {} }, { 'x-api-key': t.apiKey });
    expect(again.body.output).toBe(0);
  });
});
