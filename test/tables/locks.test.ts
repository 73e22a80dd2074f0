import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser } from '../support/accounts.js';
import { asNewWorkspace, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';
import { TablesClient, otherWorkspace, uniqueName } from './helpers.js';

// Table write locks (the reference's `locks` object): a locked kind of change answers 423 {error, lock} and
// writes nothing; only workspace admins set or lift them.

let t: TestServer;
let ws: TestServer;
let admin: TablesClient;
let writer: TablesClient;
beforeAll(async () => {
  t = await startTestServer();
  ws = await asNewWorkspace(t, 'enterprise', 'locks');
  admin = new TablesClient(ws);
  const user = await createUser(t.server.ctx.db, `${uniqueName('writer')}@example.com`);
  await addMember(t.server.ctx.db, admin.workspaceId, user.id, 'write');
  const key = await createKey(t.server.ctx.db, { workspaceId: admin.workspaceId, userId: user.id, type: 'workspace' });
  writer = new TablesClient(t, admin.workspaceId, key.secret);
});
afterAll(async () => {
  await t?.close();
});

const UNLOCKED = { schemaLocked: false, insertLocked: false, updateLocked: false, deleteLocked: false };

async function lockedTable(locks: Record<string, boolean>): Promise<{ id: string; rowId: string }> {
  const id = await admin.createTable(uniqueName('locked'), [{ name: 'email', type: 'string', unique: true }, { name: 'n', type: 'number' }]);
  const r = await admin.insert(id, { email: 'a@x', n: 1 });
  expect(r.status, r.text).toBe(200);
  if (Object.keys(locks).length > 0) {
    const set = await admin.call('PATCH', `/api/v1/tables/${id}`, { workspaceId: admin.workspaceId, locks });
    expect(set.status, set.text).toBe(200);
  }
  return { id, rowId: r.body.data.row.id as string };
}

const expectLocked = (r: { status: number; text: string; body: { error: string; lock: string } }, lock: string) => {
  expect(r.status, r.text).toBe(423);
  expect(r.body.lock).toBe(lock);
  expect(r.body.error).toMatch(/locked/);
};

describe('table locks', () => {
  it('are reported on every table, all off by default, and changed one flag at a time', async () => {
    const id = await admin.createTable(uniqueName('plain'), [{ name: 'a', type: 'string' }]);
    expect((await admin.table(id)).locks).toEqual(UNLOCKED);
    const list = await admin.call('GET', `/api/v1/tables?workspaceId=${admin.workspaceId}`);
    expect(list.body.data.tables.find((x: { id: string }) => x.id === id).locks).toEqual(UNLOCKED);

    const r = await admin.call('PATCH', `/api/v1/tables/${id}`, { workspaceId: admin.workspaceId, locks: { insertLocked: true } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.table.locks).toEqual({ ...UNLOCKED, insertLocked: true });
    await admin.call('PATCH', `/api/v1/tables/${id}`, { workspaceId: admin.workspaceId, locks: { deleteLocked: true } });
    expect((await admin.table(id)).locks).toEqual({ ...UNLOCKED, insertLocked: true, deleteLocked: true });
    await admin.call('PATCH', `/api/v1/tables/${id}`, { workspaceId: admin.workspaceId, locks: { insertLocked: false } });
    expect((await admin.table(id)).locks).toEqual({ ...UNLOCKED, deleteLocked: true });

    const audit = await t.server.ctx.db.query<{ metadata: { after: string[] } }>(
      "SELECT metadata FROM audit_logs WHERE resource_id = $1 AND action = 'table.locks_changed' ORDER BY created_at",
      [id],
    );
    expect(audit.map((a) => a.metadata.after)).toEqual([['insert'], ['insert', 'delete'], ['delete']]);
  });

  it('refuse inserts, and what an upsert would insert, under an insert lock', async () => {
    const { id } = await lockedTable({ insertLocked: true });
    const before = await admin.snapshot(id);
    expectLocked(await writer.insert(id, { email: 'b@x' }), 'insert');
    expectLocked(await writer.insertMany(id, [{ email: 'b@x' }, { email: 'c@x' }]), 'insert');
    expectLocked(await writer.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: admin.workspaceId, data: { email: 'new@x', n: 2 } }), 'insert');
    // An upsert that updates is not an insert.
    const up = await writer.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: admin.workspaceId, data: { email: 'a@x', n: 5 } });
    expect(up.status, up.text).toBe(200);
    expect(await admin.all(id)).toEqual([{ email: 'a@x', n: 5 }]);
    expect((await admin.snapshot(id)).rows).toBe(before.rows);
  });

  it('refuse every kind of update under an update lock, matching rows or not, writing nothing', async () => {
    const { id, rowId } = await lockedTable({ updateLocked: true });
    const before = await admin.snapshot(id);
    expectLocked(await writer.call('PATCH', `/api/v1/tables/${id}/rows/${rowId}`, { workspaceId: admin.workspaceId, data: { n: 2 } }), 'update');
    expectLocked(await writer.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: admin.workspaceId, filter: { n: 1 }, data: { n: 3 } }), 'update');
    expectLocked(await writer.call('PUT', `/api/v1/tables/${id}/rows`, { workspaceId: admin.workspaceId, filter: { n: 99 }, data: { n: 3 } }), 'update');
    expectLocked(await writer.call('PATCH', `/api/v1/tables/${id}/rows`, { workspaceId: admin.workspaceId, updates: [{ rowId, data: { n: 4 } }] }), 'update');
    expectLocked(await writer.call('POST', `/api/v1/tables/${id}/rows/upsert`, { workspaceId: admin.workspaceId, data: { email: 'a@x', n: 5 } }), 'update');
    expect(await admin.snapshot(id)).toEqual(before);
    // Inserts are another kind.
    expect((await writer.insert(id, { email: 'b@x', n: 2 })).status).toBe(200);
  });

  it('refuse row and table deletes under a delete lock', async () => {
    const { id, rowId } = await lockedTable({ deleteLocked: true });
    const before = await admin.snapshot(id);
    expectLocked(await writer.call('DELETE', `/api/v1/tables/${id}/rows/${rowId}?workspaceId=${admin.workspaceId}`), 'delete');
    expectLocked(await writer.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: admin.workspaceId, rowIds: [rowId] }), 'delete');
    expectLocked(await writer.call('DELETE', `/api/v1/tables/${id}/rows`, { workspaceId: admin.workspaceId, filter: { n: 1 } }), 'delete');
    expectLocked(await admin.call('DELETE', `/api/v1/tables/${id}?workspaceId=${admin.workspaceId}`), 'delete');
    expect(await admin.snapshot(id)).toEqual(before);
    expect((await admin.table(id)).name).toMatch(/^locked_/);
  });

  it('refuse column changes under a schema lock, and allow row writes', async () => {
    const { id } = await lockedTable({ schemaLocked: true });
    const columns = (await admin.table(id)).schema.columns;
    expectLocked(await writer.call('POST', `/api/v1/tables/${id}/columns`, { workspaceId: admin.workspaceId, column: { name: 'extra', type: 'string' } }), 'schema');
    expectLocked(await writer.call('PATCH', `/api/v1/tables/${id}/columns`, { workspaceId: admin.workspaceId, columnName: 'n', updates: { name: 'count' } }), 'schema');
    expectLocked(await writer.call('DELETE', `/api/v1/tables/${id}/columns`, { workspaceId: admin.workspaceId, columnName: 'n' }), 'schema');
    expect((await admin.table(id)).schema.columns).toEqual(columns);
    expect((await writer.insert(id, { email: 'b@x', n: 2 })).status).toBe(200);
  });

  it('apply to the table block of a workflow run too', async () => {
    const { id } = await lockedTable({ insertLocked: true });
    const before = await admin.snapshot(id);
    const workflowId = await deploy(ws, uniqueName('locked_insert'), {
      name: 'insert into a locked table',
      blocks: [start(), { id: 'ins', type: 'table', name: 'ins', config: { tableId: id, operation: 'insert', data: { email: 'z@x' } } }],
      edges: [{ from: 'start', to: 'ins' }],
    });
    const r = await ws.call('POST', `/api/workflows/${workflowId}/execute`, { input: {} });
    expect(r.status, r.text).toBeGreaterThanOrEqual(400);
    expect(r.text).toMatch(/Table is locked: rows cannot be inserted/);
    expect(await admin.snapshot(id)).toEqual(before);
  });

  it('are set by workspace admins only, with a clear error for bad bodies', async () => {
    const id = await admin.createTable(uniqueName('guarded'), [{ name: 'a', type: 'string' }]);
    const byWriter = await writer.call('PATCH', `/api/v1/tables/${id}`, { workspaceId: admin.workspaceId, locks: { insertLocked: true } });
    expect(byWriter.status).toBe(403);
    for (const body of [
      { workspaceId: admin.workspaceId, locks: {} },
      { workspaceId: admin.workspaceId, locks: { insertLocked: 'yes' } },
      { workspaceId: admin.workspaceId, locks: { frozen: true } },
      { workspaceId: admin.workspaceId },
      { workspaceId: admin.workspaceId, locks: { insertLocked: true }, name: 'renamed' },
    ]) {
      const r = await admin.call('PATCH', `/api/v1/tables/${id}`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    expect((await admin.table(id)).locks).toEqual(UNLOCKED);
  });

  it("answer 404 for another workspace's table and for unknown ids", async () => {
    const { id } = await lockedTable({});
    const stranger = await otherWorkspace(t, 'enterprise');
    const foreign = await stranger.call('PATCH', `/api/v1/tables/${id}`, { workspaceId: stranger.workspaceId, locks: { deleteLocked: true } });
    expect(foreign.status).toBe(404);
    const unknown = await admin.call('PATCH', `/api/v1/tables/tbl_${'0'.repeat(32)}`, { workspaceId: admin.workspaceId, locks: { deleteLocked: true } });
    expect(unknown.status).toBe(404);
    expect((await admin.table(id)).locks).toEqual(UNLOCKED);
  });
});
