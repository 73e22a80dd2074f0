// OpenAPI documents wait for the parser's threads in fair turns between workspaces, at most four of one workspace
// waiting (src/connectors/openapi-parse.ts). The test takes both of a workspace's turns itself, as two long
// documents would (the server runs in this process and shares the queue), so which saves wait or are refused is
// certain. Before, one FIFO queue served every workspace: a fifth waiting save was taken in too (this test then
// ran past its timeout), and another workspace's save waited behind all of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLoad, parseTurn } from '../../src/connectors/openapi-parse.js';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { petDocument } from './fixtures.js';

const until = async (what: string, ready: () => boolean) => {
  for (let i = 0; i < 2_000 && !ready(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!ready()) throw new Error(`never ${what}`);
};

describe('the parse queue', () => {
  let t: TestServer;
  let otherWorkspace: string;
  let otherKey: string;
  const held: (() => void)[] = [];

  beforeAll(async () => {
    t = await startTestServer();
    otherWorkspace = (await createWorkspace(t.server.ctx.db, `parse-other-${Date.now()}`, t.userId, 'enterprise')).id;
    otherKey = (await createKey(t.server.ctx.db, { workspaceId: otherWorkspace, userId: t.userId, type: 'workspace' })).secret;
  });
  afterAll(async () => {
    for (const release of held.splice(0)) release();
    await t?.close();
  });

  const save = (name: string) => t.call('POST', '/api/v1/connectors', { workspaceId: t.workspaceId, name, spec: petDocument('https://api.example.com') });

  it("refuses a workspace's fifth waiting document with 429 while another workspace's document is read", async () => {
    // Both parser threads are the workspace's (two documents being read); four saves wait for a turn.
    held.push(await parseTurn(t.workspaceId), await parseTurn(t.workspaceId));
    const saves = Array.from({ length: 4 }, (_, i) => save(`waiting ${i}`));
    await until('four waiting', () => parseLoad(t.workspaceId).waiting === 4);

    const refused = await save('one more');
    expect(refused.status, refused.text).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.body).toMatchObject({ code: 'PARSE_CONCURRENCY_LIMIT', retryable: true, retryAfterSeconds: 5 });
    expect(refused.body.error).toContain('waiting to be read');

    // The other workspace's document is read now, while the first workspace's four still wait.
    const other = await request(`${t.url}/api/v1/connectors`, 'POST', { workspaceId: otherWorkspace, name: 'Pets', spec: petDocument('https://api.example.com') }, { 'x-api-key': otherKey });
    expect(other.status, other.text).toBe(201);
    expect(parseLoad(t.workspaceId).waiting).toBe(4);

    for (const release of held.splice(0)) release();
    const done = await Promise.all(saves);
    expect(done.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(parseLoad(t.workspaceId).waiting).toBe(0);
    const listed = await t.call('GET', `/api/v1/connectors?workspaceId=${t.workspaceId}`);
    expect(listed.body.data.connectors.map((c: { name: string }) => c.name).sort()).toEqual(['waiting 0', 'waiting 1', 'waiting 2', 'waiting 3']);
  });
});
