// A delivery whose process is killed mid-run: its retry, on a new process, takes the claim over once
// the lease lapsed and runs the workflow (the retry is not refused as a duplicate, nor run twice).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { freePort, spawnServer } from '../support/cli.js';
import { bootstrappedDatabase, request } from '../support/harness.js';
import { hook } from './support.js';

let upstream: http.Server;
let upstreamUrl: string;
let hang = true;
let onHang: (() => void) | undefined;

beforeAll(async () => {
  upstream = http.createServer((_req, res) => {
    if (hang) {
      onHang?.();
      return; // never answered: the process is killed while this block runs
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const addr = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(() => {
  upstream.closeAllConnections();
  upstream.close();
});

describe('takeover after a crash', () => {
  it('a retry of a delivery whose process was killed runs once the lease lapsed', async () => {
    const { where, workspaceId, apiKey, env: base } = await bootstrappedDatabase();
    const boot = { workspaceId };
    const env = { ...base, WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_WEBHOOK_LEASE_MS: '1500', WEFT_JOB_LEASE_MS: '3000' };
    const headers = { 'x-api-key': apiKey };
    let server = await spawnServer(env, await freePort());
    try {
      const created = await request(`${server.url}/api/v1/workflows`, 'POST', {
        workspaceId: boot.workspaceId, name: 'crashy',
        definition: {
          blocks: [hook({ path: 'crashy', responseMode: 'result' }), { id: 'call', type: 'http', name: 'Call', config: { url: `${upstreamUrl}/x` } }],
          edges: [{ from: 'hook', to: 'call' }],
        },
      }, headers);
      expect(created.status).toBe(201);
      const id = created.body.data.workflow.id;
      expect((await request(`${server.url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, headers)).status).toBe(200);

      const hung = new Promise<void>((r) => (onHang = r));
      const delivery = { 'content-type': 'application/json', 'x-github-delivery': 'crash-delivery-1' };
      const first = request(`${server.url}/api/webhooks/trigger/crashy`, 'POST', '{"a":1}', delivery).catch(() => undefined);
      await hung;
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      await first;

      hang = false;
      server = await spawnServer(env, await freePort());
      const retry = await request(`${server.url}/api/webhooks/trigger/crashy`, 'POST', '{"a":1}', delivery);
      expect(retry.status).toBe(200);
      expect(retry.body).toMatchObject({ success: true, output: { data: { ok: true } } });
      // A further duplicate gets the same answer without a run.
      const again = await request(`${server.url}/api/webhooks/trigger/crashy`, 'POST', '{"a":1}', delivery);
      expect(again.body.executionId).toBe(retry.body.executionId);
      // The killed run was failed by the sweep, the retry's run completed (PostgreSQL: readable beside the server).
      if (where.databaseUrl) {
        const db2 = await connectDatabase({ dataDir: '', databaseUrl: where.databaseUrl });
        const runs = await db2.query<{ status: string }>('SELECT status FROM executions WHERE workflow_id = $1 ORDER BY created_at', [id]);
        expect(runs.filter((r) => r.status === 'completed')).toHaveLength(1);
        await db2.close();
      }
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);
});
