import { afterAll, beforeAll, expect, it } from 'vitest';
import { insertUser } from '../../src/accounts/store.js';
import { addMember, createKey } from '../support/accounts.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

// Row writes call the StorageGuard inside their transaction. On PGlite any query on the database
// (rather than on the transaction) waits for the transaction to end, so a quota lookup that reads the
// workspace's plan from the database there deadlocks the embedded server. A personal key's request
// does not warm the workspace plan cache; this server caches nothing (WEFT_KEY_CACHE_MS=0), so every
// insert takes the path that once hung (found while splitting the tables service).

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_KEY_CACHE_MS: '0' } });
});
afterAll(async () => {
  await t?.close();
});

it('inserts with a personal key while no workspace plan is cached (no deadlock in the storage check)', async () => {
  const c = await otherWorkspace(t, 'team');
  const id = await c.createTable(uniqueName('pk'), [{ name: 'a', type: 'string' }]);
  const u = await insertUser(t.server.ctx.db, { id: crypto.randomUUID(), email: `w${Date.now()}@x`, name: 'W', isAdmin: false, plan: 'team' });
  await addMember(t.server.ctx.db, c.workspaceId, u.id, 'write');
  const k = await createKey(t.server.ctx.db, { workspaceId: c.workspaceId, userId: u.id, type: 'personal' });
  const writer = new TablesClient(t, c.workspaceId, k.secret);
  const hung = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('insert hung: storage check deadlocked')), 8_000));
  const r = await Promise.race([writer.insert(id, { a: 'x' }), hung]);
  expect(r.status).toBe(200);
});
