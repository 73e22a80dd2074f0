// What workflows count toward the workspace's storage limit (docs/architecture.md, Where limits are enforced):
// the draft and every deployed version, each a copy of a definition of up to 2 MB kept for good. Before, none of
// it counted: a free workspace (30 API requests a minute) could save and deploy 15 times 2 MB a minute, about
// 43 GB a day, against its 5 GiB.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asNewWorkspace, startTestServer, type TestServer } from '../support/harness.js';

/** The free plan stores this many bytes here. */
const FREE_BYTES = 2_000_000;
const CHARS = 400_000;

/** A definition of about CHARS bytes: one variables block holding a long string. */
const bulky = (fill: string) => ({
  blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'v', type: 'variables', name: 'V', config: { assignments: { big: fill.repeat(CHARS) } } }],
  edges: [{ from: 'start', to: 'v' }],
});

let t: TestServer;
let free: TestServer;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_PLAN_LIMITS: JSON.stringify({ free: { storageBytes: FREE_BYTES, apiPerMinute: 100_000 } }) } });
  free = await asNewWorkspace(t, 'free', 'workflows-free');
});
afterAll(async () => {
  await t?.close();
});

const storedBytes = async (): Promise<number> => {
  const r = await free.call('GET', '/api/users/me/usage-limits');
  expect(r.status, r.text).toBe(200);
  return r.body.storage.usedBytes as number;
};

describe("a workflow's storage", () => {
  it('counts the draft and every deployed version, and refuses a save or a deploy past the plan with nothing written', async () => {
    const start = await storedBytes();
    const created = await free.call('POST', '/api/v1/workflows', { workspaceId: free.workspaceId, name: 'bulky', definition: bulky('a') });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.workflow.id;
    const draft = (await storedBytes()) - start;
    expect(draft).toBeGreaterThan(CHARS);
    expect(draft).toBeLessThan(CHARS + 2_000);

    // Each deploy keeps a copy: three fit in 2 MB beside the draft.
    for (let i = 1; i <= 3; i++) {
      expect((await free.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
      const used = (await storedBytes()) - start;
      expect(used).toBeGreaterThan((i + 1) * CHARS);
      expect(used).toBeLessThan((i + 1) * (CHARS + 2_000));
    }
    // A changed draft of the same size adds nothing; a fourth version does not fit.
    const before = await storedBytes();
    const saved = await free.call('PUT', `/api/v1/workflows/${id}`, { name: 'bulky', definition: bulky('b') });
    expect(saved.status, saved.text).toBe(200);
    expect(await storedBytes()).toBe(before);
    const refused = await free.call('POST', `/api/v1/workflows/${id}/deploy`);
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
    const versions = await free.call('GET', `/api/v1/workflows/${id}/versions`);
    expect(versions.body.data.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    const other = await free.call('POST', '/api/v1/workflows', { workspaceId: free.workspaceId, name: 'another', definition: bulky('c') });
    expect(other.status, other.text).toBe(403);
    expect(other.body.code).toBe('STORAGE_LIMIT_EXCEEDED');
    expect(await storedBytes()).toBe(before);

    // Deleting the workflow frees its draft and its versions.
    expect((await free.call('DELETE', `/api/v1/workflows/${id}`)).status).toBe(200);
    expect(await storedBytes()).toBe(start);
  }, 60_000);

  it("counts a deployment's name and description with its version", async () => {
    const created = await free.call('POST', '/api/v1/workflows', { workspaceId: free.workspaceId, name: 'labelled', definition: bulky('d') });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.workflow.id;
    const before = await storedBytes();
    expect((await free.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    const plain = (await storedBytes()) - before;
    const labelled = { name: 'Release', description: 'é'.repeat(20_000) };
    expect((await free.call('POST', `/api/v1/workflows/${id}/deploy`, labelled)).status).toBe(200);
    // The same definition again, plus the label's UTF-8 bytes.
    expect((await storedBytes()) - before - plain).toBe(plain + 'Release'.length + 40_000);
    expect((await free.call('DELETE', `/api/v1/workflows/${id}`)).status).toBe(200);
  }, 60_000);
});
