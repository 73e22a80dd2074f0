// The audit log of administrative actions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('audit log', () => {
  it('records key creation and revocation with cursor pagination', async () => {
    for (let i = 0; i < 3; i++) await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: `audit-${i}`, type: 'workspace' });
    const first = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.data[0].action).toBe('api_key.created');
    expect(first.body.data[0].resourceName).toBe('audit-2');
    expect(first.body.nextCursor).toBeTruthy();
    const seen = new Set(first.body.data.map((e: { id: string }) => e.id));
    let cursor = first.body.nextCursor;
    let pages = 1;
    while (cursor) {
      const next = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=2&cursor=${cursor}`);
      for (const e of next.body.data) {
        expect(seen.has(e.id)).toBe(false);
        seen.add(e.id);
      }
      cursor = next.body.nextCursor;
      pages++;
    }
    expect(pages).toBeGreaterThan(1);
    const bad = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&cursor=garbage`);
    expect(bad.status).toBe(400);
  });
});
