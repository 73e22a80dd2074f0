// Definitions are checked when saved: the blocks cap, references to undeclared start fields, and
// JavaScript syntax errors with the user's line and column.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const save = (name: string, definition: unknown) => t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name, definition });

describe('saving a definition', () => {
  it('refuses a misspelled start field, naming the block and the field', async () => {
    const r = await save('misspelled', {
      blocks: [start([{ name: 'who', type: 'string' }]), fn('greet', 'return { text: "hello " + <start.whom> }', 'Greet')],
      edges: [{ from: 'start', to: 'greet' }],
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/whom/);
    expect(r.body.details[0]).toMatchObject({ blockId: 'greet' });
    const list = await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`);
    expect(list.body.data.some((w: { name: string }) => w.name === 'misspelled')).toBe(false);
  });

  it('still accepts declared fields', async () => {
    const r = await save('declared', {
      blocks: [start([{ name: 'who', type: 'string' }]), fn('greet', 'return { text: "hello " + <start.who> }', 'Greet')],
      edges: [{ from: 'start', to: 'greet' }],
    });
    expect(r.status).toBe(201);
  });

  it('reports a syntax error in function code with the line and column of the user\'s code', async () => {
    const r = await save('syntax', {
      blocks: [start([{ name: 'who', type: 'string' }]), fn('greet', 'const a = <start.who>;\nreturn { a: a +* 1 }', 'Greet')],
      edges: [{ from: 'start', to: 'greet' }],
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/syntax error at line 2, column \d+/);
    expect(r.body.details[0]).toMatchObject({ blockId: 'greet' });
  });

  it('refuses more blocks than the cap, naming the limit', async () => {
    const blocks = [start(), ...Array.from({ length: 1_000 }, (_, i) => fn(`f${i}`, 'return 1'))];
    const r = await save('too-many', { blocks, edges: [] });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/1001 blocks; at most 1000/);
  });
});
