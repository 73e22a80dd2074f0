// Server-minted execution ids are version-7 UUIDs: later runs sort after earlier ones (docs/architecture.md,
// "Run ids"), so the indexes keyed by them grow at one end as history accumulates.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let t: TestServer;
let workflowId: string;
beforeAll(async () => {
  t = await startTestServer();
  const created = await t.call('POST', '/api/v1/workflows', {
    workspaceId: t.workspaceId, name: 'ids-in-order',
    definition: { blocks: [start(), fn('answer', 'return { ok: true }')], edges: [{ from: 'start', to: 'answer' }] },
  });
  workflowId = created.body.data.workflow.id;
  await t.call('POST', `/api/v1/workflows/${workflowId}/deploy`);
});
afterAll(async () => {
  await t?.close();
});

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('server-minted execution ids', () => {
  it('are version-7 UUIDs in the order the runs were accepted, sync and async alike', async () => {
    const idsOf = async (body: Record<string, unknown>, status: number) => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await t.call('POST', `/api/workflows/${workflowId}/execute`, body);
        expect(r.status, r.text).toBe(status);
        ids.push(r.body.executionId);
        // Apart by more than a millisecond: within one the order is random.
        await pause(3);
      }
      return ids;
    };
    for (const ids of [await idsOf({ inputs: {} }, 200), await idsOf({ async: true }, 202)]) {
      for (const id of ids) expect(id).toMatch(V7);
      expect([...ids].sort()).toEqual(ids);
      // The time in the id is about when the run was accepted (a charge reserved ahead drew its id a little earlier).
      const logged = await t.call('GET', `/api/v1/logs/${ids[0]}`);
      expect(logged.status).toBe(200);
      const msInId = parseInt(ids[0].replace(/-/g, '').slice(0, 12), 16);
      expect(Math.abs(msInId - Date.parse(logged.body.data.createdAt))).toBeLessThan(120_000);
    }
  });

  it('still come back as the caller chose them when an X-Execution-Id is sent', async () => {
    const r = await t.call('POST', `/api/workflows/${workflowId}/execute`, {}, { 'x-execution-id': 'caller-chosen-1' });
    expect(r.status).toBe(200);
    expect(r.body.executionId).toBe('caller-chosen-1');
  });
});
