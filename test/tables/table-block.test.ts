import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile, realClock, runWorkflow, validateDefinition, type BlockDefinition, type EnginePorts, type WorkflowDefinition,
} from '../../src/engine/index.js';
import { StorageAccounting } from '../../src/limits/storage.js';
import { TablesService, tableStorageBytes } from '../../src/tables/service.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { TablesClient, otherWorkspace } from './helpers.js';

let t: TestServer;
let c: TablesClient;
let tableId: string;
let tables: TablesService;

beforeAll(async () => {
  t = await startTestServer();
  tables = new TablesService(t.server.ctx.db, { storage: new StorageAccounting([tableStorageBytes], async () => undefined) });
  c = await otherWorkspace(t, 'team');
  tableId = await c.createTable('contacts', [
    { name: 'email', type: 'string', required: true, unique: true },
    { name: 'age', type: 'number' },
    { name: 'tier', type: 'select', options: ['free', 'paid'] },
  ]);
});
afterAll(async () => {
  await t?.close();
});

// The table block needs neither HTTP nor a sandbox.
const unused = { request: async () => { throw new Error('not used'); }, run: async () => { throw new Error('not used'); } };

function ports(workspaceId = c.workspaceId): EnginePorts {
  return { http: unused, sandbox: unused, clock: realClock, tables: tables.portFor(workspaceId, 'team') };
}

const start: BlockDefinition = {
  id: 'start', type: 'start', name: 'Start',
  config: { inputFormat: [{ name: 'email', type: 'string' }, { name: 'age', type: 'number' }, { name: 'min', type: 'number' }] },
};
const table = (id: string, config: Record<string, unknown>): BlockDefinition => ({ id, type: 'table', name: id, config: { tableId, ...config } });

async function run(blocks: BlockDefinition[], input: Record<string, unknown>, edges?: WorkflowDefinition['edges'], p = ports()) {
  const def: WorkflowDefinition = {
    name: 'tables', blocks: [start, ...blocks],
    edges: edges ?? [start, ...blocks].slice(1).map((b, i) => ({ from: [start, ...blocks][i].id, to: b.id })),
  };
  return runWorkflow(compile(def), { input, ports: p });
}

const outputOf = (r: Awaited<ReturnType<typeof run>>, id: string) => r.trace.find((x) => x.blockId === id)?.output as Record<string, any>;

describe('table block', () => {
  it('inserts, queries, updates, upserts, gets and deletes with references resolved', async () => {
    const r = await run([
      table('ins', { operation: 'insert', data: { email: '<start.email>', age: '<start.age>', tier: 'free' } }),
      table('batch', { operation: 'insert', rows: [{ email: 'b@x', age: 20 }, { email: 'c@x', age: 40 }] }),
      table('q', { operation: 'query', filter: { age: { $gte: '<start.min>' } }, sort: { age: 'desc' }, limit: 10 }),
      table('upd', { operation: 'update', filter: { email: '<start.email>' }, data: { tier: 'paid' } }),
      table('one', { operation: 'update', rowId: '<batch.rows[0].id>', data: { age: 21 } }),
      table('ups', { operation: 'upsert', data: { email: 'c@x', age: 41 } }),
      table('get', { operation: 'get', rowId: '<ins.row.id>' }),
      table('del', { operation: 'delete', rowIds: ['<batch.rows[0].id>'] }),
      table('final', { operation: 'query', sort: { email: 'asc' } }),
    ], { email: 'a@x', age: '35', min: 30 });
    expect(r.status, JSON.stringify(r.error)).toBe('completed');
    expect(outputOf(r, 'ins').row.data).toEqual({ email: 'a@x', age: 35, tier: 'free' });
    expect(outputOf(r, 'batch').insertedCount).toBe(2);
    const q = outputOf(r, 'q');
    expect(q.rows.map((x: { data: { email: string } }) => x.data.email)).toEqual(['c@x', 'a@x']);
    expect(q).toMatchObject({ rowCount: 2, totalCount: 2, limit: 10, offset: 0 });
    expect(outputOf(r, 'upd')).toEqual({ updatedCount: 1, updatedRowIds: [outputOf(r, 'ins').row.id] });
    expect(outputOf(r, 'one').updatedRowIds).toEqual([outputOf(r, 'batch').rows[0].id]);
    expect(outputOf(r, 'ups').operation).toBe('update');
    expect(outputOf(r, 'get').row.data).toEqual({ email: 'a@x', age: 35, tier: 'paid' });
    expect(outputOf(r, 'del')).toEqual({ deletedCount: 1, deletedRowIds: [outputOf(r, 'batch').rows[0].id] });
    expect((r.output as { rows: { data: unknown }[] }).rows.map((x) => x.data)).toEqual([
      { email: 'a@x', age: 35, tier: 'paid' }, { email: 'c@x', age: 41 },
    ]);
    expect(await c.all(tableId)).toEqual([{ email: 'a@x', age: 35, tier: 'paid' }, { email: 'c@x', age: 41 }]);
  });

  it('accepts a table name instead of an id, and filters given as JSON text', async () => {
    const r = await run([
      { id: 'q', type: 'table', name: 'q', config: { operation: 'query', tableId: 'contacts', filter: '{"email": "c@x"}' } },
    ], {});
    expect(r.status).toBe('completed');
    expect(outputOf(r, 'q').rows).toHaveLength(1);
  });

  it('fails the run with the API error message; an error edge can route it', async () => {
    const failed = await run([table('bad', { operation: 'query', filter: { ghost: 1 } })], {});
    expect(failed.status).toBe('failed');
    expect(failed.error?.message).toMatch(/Unknown column "ghost" in filter/);
    expect(failed.error?.blockId).toBe('bad');

    const dup = await run([table('dup', { operation: 'insert', data: { email: 'a@x' } })], {});
    expect(dup.status).toBe('failed');
    expect(dup.error?.message).toMatch(/Column "email" must be unique/);

    const routed = await run(
      [table('bad', { operation: 'insert', data: { email: 'z@x', age: 'old' } }), table('fallback', { operation: 'query', filter: { email: 'z@x' } })],
      {},
      [{ from: 'start', to: 'bad' }, { from: 'bad', to: 'fallback', on: 'error' }],
    );
    expect(routed.status).toBe('completed');
    expect(outputOf(routed, 'fallback').totalCount).toBe(0);
  });

  it('cannot reach a table of another workspace', async () => {
    const other = await otherWorkspace(t, 'team');
    const r = await run([table('q', { operation: 'query' })], {}, undefined, ports(other.workspaceId));
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/Table not found/);
  });

  it('fails clearly without a tables port', async () => {
    const r = await run([table('q', { operation: 'query' })], {}, undefined, { http: unused, sandbox: unused, clock: realClock });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/tables are not available/);
  });

  it('validates the config when a definition is checked', () => {
    // References must name declared start fields: declare the filter passed in as input.
    const inputFormat = [...(start.config as { inputFormat: unknown[] }).inputFormat, { name: 'filter', type: 'object' }];
    const withFilter: BlockDefinition = { ...start, config: { inputFormat } };
    const check = (config: Record<string, unknown>): string[] => {
      const r = validateDefinition({
        name: 'v', blocks: [withFilter, { id: 't', type: 'table', name: 't', config }], edges: [{ from: 'start', to: 't' }],
      });
      return r.ok ? [] : r.errors.map((i) => i.message);
    };
    expect(check({ operation: 'query', tableId: 'tbl_x' })).toEqual([]);
    expect(check({ operation: 'get', tableId: 'tbl_x' }).join(' ')).toMatch(/get needs rowId/);
    expect(check({ operation: 'update', tableId: 'tbl_x', data: {} }).join(' ')).toMatch(/rowId or filter/);
    expect(check({ operation: 'drop', tableId: 'tbl_x' }).length).toBeGreaterThan(0);
    expect(check({ operation: 'query', tableId: 'tbl_x', extra: 1 }).length).toBeGreaterThan(0);
    expect(check({ operation: 'query', tableId: 'tbl_x', filter: '<start.filter>', limit: '<start.min>' })).toEqual([]);
  });
});

describe('table block in a deployed workflow', () => {
  it('runs through the execute API against the workspace tables', async () => {
    const { deploy } = await import('../support/workflows.js');
    const ws = new TablesClient(t);
    const id = await ws.createTable('signups', [{ name: 'email', type: 'string', unique: true }, { name: 'n', type: 'number' }]);
    const wf = await deploy(t, 'table-flow', {
      blocks: [
        { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'email', type: 'string' }] } },
        { id: 'save', type: 'table', name: 'Save', config: { operation: 'upsert', tableId: id, data: { email: '<start.email>', n: 1 } } },
        { id: 'count', type: 'table', name: 'Count', config: { operation: 'query', tableId: 'signups', filter: { email: '<start.email>' } } },
        { id: 'reply', type: 'response', name: 'Reply', config: { data: { op: '<save.operation>', total: '<count.totalCount>' } } },
      ],
      edges: [{ from: 'start', to: 'save' }, { from: 'save', to: 'count' }, { from: 'count', to: 'reply' }],
    });
    const first = await t.call('POST', `/api/workflows/${wf}/execute`, { email: 'w@x' });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ op: 'insert', total: 1 });
    const again = await t.call('POST', `/api/workflows/${wf}/execute`, { email: 'w@x' });
    expect(again.body).toMatchObject({ op: 'update', total: 1 });
    expect(await ws.all(id)).toEqual([{ email: 'w@x', n: 1 }]);
  });
});
