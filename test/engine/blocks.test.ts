import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockTypes, compile, runWorkflow, type ChildWorkflowPort, type WorkflowDefinition } from '../../src/engine/index.js';
import { chain, fn, json, ports, run, start, startServer, workflow, type TestServer } from './helpers.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({
    '/json': (req, _body, res) => json(res, 200, { hello: 'world', query: new URL(req.url ?? '/', 'http://x').searchParams.getAll('tag') }),
    '/text': (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('plain text');
    },
    '/echo': (req, body, res) => json(res, 200, { method: req.method, body, contentType: req.headers['content-type'] ?? null, auth: req.headers.authorization ?? null }),
    '/boom': (_req, _body, res) => json(res, 500, { error: 'exploded' }),
    '/slow': (_req, _body, res) => {
      setTimeout(() => json(res, 200, { late: true }), 500);
    },
  });
});
afterAll(async () => {
  await server.close();
});

describe('registry', () => {
  it('lists the block types', () => {
    for (const t of ['start', 'function', 'condition', 'http', 'response', 'variables', 'wait', 'loop', 'parallel', 'workflow', 'human']) {
      expect(blockTypes.get(t)?.type).toBe(t);
    }
  });
});

describe('http block', () => {
  it('GET: parses JSON responses and adds query parameters', async () => {
    const d = workflow([start(), { id: 'h', type: 'http', name: 'H', config: { url: `${server.url}/json`, query: { tag: ['a', 'b'] } } }], chain('start', 'h'));
    const r = await run(d);
    expect(r.output).toMatchObject({ status: 200, data: { hello: 'world', query: ['a', 'b'] } });
    expect((r.output as { headers: Record<string, string> }).headers['content-type']).toBe('application/json');
  });

  it('returns text bodies as text', async () => {
    const r = await run(workflow([start(), { id: 'h', type: 'http', name: 'H', config: { url: `${server.url}/text` } }], chain('start', 'h')));
    expect((r.output as { data: unknown }).data).toBe('plain text');
  });

  it('POST: sends object bodies as JSON, with resolved references and secrets in headers', async () => {
    const d = workflow(
      [
        start([{ name: 'id', type: 'number' }]),
        { id: 'h', type: 'http', name: 'H', config: { url: `${server.url}/echo`, method: 'post', headers: { Authorization: 'Bearer {{TOKEN}}' }, body: { id: '<start.id>', note: 'id <start.id>' } } },
      ],
      chain('start', 'h'),
    );
    const r = await run(d, { input: { id: 5 }, secrets: { TOKEN: 't0k' } });
    // The server received the value; what the run reports has it masked.
    expect(server.requests.at(-1)?.headers.authorization).toBe('Bearer t0k');
    expect((r.output as { data: unknown }).data).toEqual({ method: 'POST', body: '{"id":5,"note":"id 5"}', contentType: 'application/json', auth: 'Bearer ***' });
    expect(JSON.stringify(r.trace[1].input)).not.toContain('t0k');
  });

  it('a status >= 400 is a block error naming the status, which an error edge can handle', async () => {
    const d = workflow(
      [start(), { id: 'h', type: 'http', name: 'Call', config: { url: `${server.url}/boom` } }, fn('handler', 'return "handled: " + <call.error>')],
      chain('start', 'h'),
    );
    const r = await run(d);
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe(`Block "Call" failed: HTTP 500 from GET ${server.url}/boom: {"error":"exploded"}`);
    d.edges.push({ from: 'h', to: 'handler', on: 'error' });
    expect((await run(d)).output).toBe(`handled: HTTP 500 from GET ${server.url}/boom: {"error":"exploded"}`);
  });

  it('honours the block timeout', async () => {
    const r = await run(workflow([start(), { id: 'h', type: 'http', name: 'H', config: { url: `${server.url}/slow`, timeoutMs: 50 } }], chain('start', 'h')));
    expect(r.error?.message).toBe('Block "H" failed: request timed out after 50 ms');
  });

  it('fetch inside function code goes through the HTTP port', async () => {
    const code = `const r = await fetch(<start.base> + '/echo', { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hi' });
      const j = await r.json();
      return { ok: r.ok, status: r.status, ct: r.headers.get('Content-Type'), j };`;
    const r = await run(workflow([start([{ name: 'base', type: 'string' }]), fn('f', code)], chain('start', 'f')), { input: { base: server.url } });
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ ok: true, status: 200, ct: 'application/json', j: { method: 'PUT', body: 'hi', contentType: 'text/plain', auth: null } });
  });
});

describe('workflow block', () => {
  const library = new Map<string, WorkflowDefinition>();
  const runs: { id: string; depth: number }[] = [];
  const children: ChildWorkflowPort = {
    async run(workflowId, input, opts) {
      runs.push({ id: workflowId, depth: opts.depth });
      const def = library.get(workflowId);
      if (!def) return { success: false, output: null, error: `workflow ${workflowId} not found` };
      const r = await runWorkflow(compile(def), { input, ports: ports({ workflows: children }), depth: opts.depth, signal: opts.signal });
      return r.status === 'completed' ? { success: true, output: r.output } : { success: false, output: null, error: r.error?.message };
    },
  };
  library.set('double', workflow([start([{ name: 'x', type: 'number', required: true }]), fn('d', 'return <start.x> * 2')], chain('start', 'd')));
  library.set('self', workflow([start(), { id: 'again', type: 'workflow', name: 'Again', config: { workflowId: 'self' } }], chain('start', 'again')));

  it('runs a child one level deeper with resolved input; output = child output', async () => {
    runs.length = 0;
    const d = workflow([start([{ name: 'n', type: 'number' }]), { id: 'w', type: 'workflow', name: 'W', config: { workflowId: 'double', input: { x: '<start.n>' } } }], chain('start', 'w'));
    const r = await runWorkflow(compile(d), { input: { n: 21 }, ports: ports({ workflows: children }), depth: 2 });
    expect(r.output).toBe(42);
    expect(runs).toEqual([{ id: 'double', depth: 3 }]);
  });

  it('child failure is a block error', async () => {
    const d = workflow([start(), { id: 'w', type: 'workflow', name: 'W', config: { workflowId: 'double', input: {} } }], chain('start', 'w'));
    const r = await runWorkflow(compile(d), { input: {}, ports: ports({ workflows: children }) });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toBe('Block "W" failed: child workflow double failed: Block "Start" failed: Missing required input field "x"');
  });

  it('refuses to nest beyond depth 10', async () => {
    runs.length = 0;
    const r = await runWorkflow(compile(library.get('self') as WorkflowDefinition), { input: {}, ports: ports({ workflows: children }) });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toContain('maximum workflow nesting depth of 10 reached');
    expect(runs.map((x) => x.depth)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('fails clearly without a child-workflow port', async () => {
    const d = workflow([start(), { id: 'w', type: 'workflow', name: 'W', config: { workflowId: 'x' } }], chain('start', 'w'));
    expect((await run(d)).error?.message).toBe('Block "W" failed: child workflows are not available in this context');
  });
});
