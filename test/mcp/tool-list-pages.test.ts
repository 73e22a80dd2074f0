// tools/list in pages bounded by bytes (docs/architecture.md, Where limits are enforced). A tool's schema comes
// from its start block's input format, which a 2 MB definition can fill; three hundred such tools made one
// answer past V8's longest string, and the client got an empty body. Here six tools of about 1.9 MB each:
// more than one page holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MAX_LISTED_TOOL_BYTES } from '../../src/mcp/tool-catalog.js';
import { startTestServer, type TestServer } from '../support/harness.js';

const DESCRIPTION_CHARS = 1_900_000;
const TOOLS = 6;

let t: TestServer;
let client: Client;
const names: string[] = [];

beforeAll(async () => {
  t = await startTestServer();
  for (let i = 0; i < TOOLS; i++) {
    const name = `Big tool ${i}`;
    const definition = {
      blocks: [{ id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'q', type: 'string', description: `${i}`.repeat(DESCRIPTION_CHARS) }] } }],
      edges: [],
    };
    const created = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name, definition });
    expect(created.status, created.text.slice(0, 300)).toBe(201);
    const deployed = await t.call('POST', `/api/v1/workflows/${created.body.data.workflow.id}/deploy`);
    expect(deployed.status, deployed.text.slice(0, 300)).toBe(200);
    names.push(`big_tool_${i}`);
  }
  client = new Client({ name: 'weft-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/api/mcp/${t.workspaceId}`), { requestInit: { headers: { 'x-api-key': t.apiKey } } }));
}, 120_000);
afterAll(async () => {
  await client?.close();
  await t?.close();
});

/** The JSON-RPC answers of one raw request (the server answers as server-sent events). */
async function rawCall(body: unknown): Promise<{ id: number; result?: { tools: { name: string }[]; nextCursor?: string }; error?: { code: number; message: string } }[]> {
  const r = await fetch(`${t.url}/api/mcp/${t.workspaceId}`, {
    method: 'POST',
    headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
  const text = await r.text();
  return text.split('\n').filter((l) => l.startsWith('data: ')).flatMap((l) => {
    const v = JSON.parse(l.slice(6)) as unknown;
    return Array.isArray(v) ? v : [v];
  });
}

describe('tools/list pages', () => {
  it('stops a page before it passes the byte bound and goes on from nextCursor, every tool once, in creation order', async () => {
    const first = await client.listTools();
    const perTool = DESCRIPTION_CHARS;
    const fit = Math.floor(MAX_LISTED_TOOL_BYTES / perTool);
    expect(first.tools.map((x) => x.name)).toEqual(names.slice(0, fit));
    expect(typeof first.nextCursor).toBe('string');
    const second = await client.listTools({ cursor: first.nextCursor });
    expect(second.tools.map((x) => x.name)).toEqual(names.slice(fit));
    expect(second.nextCursor).toBeUndefined();
    // The schema is whole: the field's description as the start block declares it.
    const described = (second.tools[0].inputSchema.properties as Record<string, { description: string }>).q.description;
    expect(described).toBe(`${fit}`.repeat(DESCRIPTION_CHARS));
  }, 60_000);

  it('bounds what one request lists, all its tools/list messages together', async () => {
    const fit = Math.floor(MAX_LISTED_TOOL_BYTES / DESCRIPTION_CHARS);
    // Three messages asking for the first page: the request's answers together hold at most one page's bytes.
    // The messages run at once, so which gets how many varies: each is a prefix of the tools with its
    // nextCursor, or (the bound spent) an error saying to ask again alone.
    const answers = await rawCall([1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, method: 'tools/list' })));
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3]);
    let listed = 0;
    for (const a of answers) {
      if (a.error) {
        expect(a.error.message).toContain('in a request of its own');
        continue;
      }
      const got = a.result!.tools.map((x) => x.name);
      expect(got).toEqual(names.slice(0, got.length));
      expect(got.length).toBeGreaterThan(0);
      expect(typeof a.result!.nextCursor).toBe('string');
      listed += got.length;
    }
    expect(listed).toBeGreaterThan(0);
    expect(listed).toBeLessThanOrEqual(fit);
    // Alone, a page answers in full.
    const [alone] = await rawCall({ jsonrpc: '2.0', id: 4, method: 'tools/list' });
    expect(alone.result?.tools.map((x) => x.name)).toEqual(names.slice(0, fit));
  }, 60_000);

  it('answers a cursor it did not give as invalid params, and a cursor past the end with no tools', async () => {
    const [bad] = await rawCall({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 'not-a-cursor' } });
    expect(bad.error?.code).toBe(-32602);
    expect(bad.error?.message).toContain('Invalid cursor');
    const end = Buffer.from(JSON.stringify({ t: '2999-01-01T00:00:00.000Z', id: 'z' })).toString('base64url');
    const [past] = await rawCall({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: end } });
    expect(past.result?.tools).toEqual([]);
    expect(past.result?.nextCursor).toBeUndefined();
  });
});
