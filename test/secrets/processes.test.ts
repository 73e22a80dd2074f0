// Secrets in real server processes: the embedded key file and the start-up line about it, a server's
// stderr (at debug level) that never holds a value, a PostgreSQL server refusing to start without
// WEFT_ENCRYPTION_KEY, and a separate worker process resolving secrets for async runs.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrappedDatabase, dbMode, request } from '../support/harness.js';
import { freePort, runCli, spawnServer } from '../support/cli.js';
import { fn, start } from '../support/workflows.js';
import { startServer as startRecorder, type TestServer as Recorder } from '../engine/helpers.js';

const VALUE = `tok_${randomBytes(12).toString('hex')}`;

const stop = async (child: ChildProcess) => {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
};

/** Sets API_TOKEN, deploys a workflow that sends it, returns it and one that throws it; runs each sync and async. */
async function exercise(url: string, apiKey: string, workspaceId: string, recorder: Recorder): Promise<string[]> {
  const h = { 'x-api-key': apiKey };
  const texts: string[] = [];
  expect((await request(`${url}/api/v1/secrets/API_TOKEN`, 'PUT', { workspaceId, value: VALUE }, h)).status).toBe(201);
  const ids: string[] = [];
  for (const [name, blocks] of [
    ['sends', [start(), { id: 'call', type: 'http', name: 'Call', config: { url: `${recorder.url}/hook`, headers: { Authorization: 'Bearer {{API_TOKEN}}' } } },
      fn('ret', 'console.log({{API_TOKEN}}); return [<call.data>, {{API_TOKEN}}]')]],
    ['throws', [start(), fn('boom', 'throw new Error("rejected " + {{API_TOKEN}})')]],
  ] as const) {
    const edges = blocks.slice(1).map((b, i) => ({ from: blocks[i].id, to: b.id }));
    const created = await request(`${url}/api/v1/workflows`, 'POST', { workspaceId, name, definition: { blocks, edges } }, h);
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.workflow.id;
    await request(`${url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, h);
    ids.push(id);
  }
  for (const id of ids) {
    const sync = await request(`${url}/api/workflows/${id}/execute`, 'POST', {}, h);
    texts.push(sync.text);
    const job = await request(`${url}/api/workflows/${id}/execute`, 'POST', { async: true }, h);
    for (let k = 0; k < 200; k++) {
      const status = await request(`${url}/api/jobs/${job.body.jobId}`, 'GET', undefined, h);
      if (status.body.status === 'completed' || status.body.status === 'failed') {
        texts.push(status.text);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  texts.push((await request(`${url}/api/v1/logs?workspaceId=${workspaceId}&details=full`, 'GET', undefined, h)).text);
  expect(recorder.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${VALUE}`, `Bearer ${VALUE}`]);
  return texts;
}

describe('secrets in server processes', () => {
  let recorder: Recorder;

  beforeAll(async () => {
    recorder = await startRecorder({
      '/hook': (req, _body, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ youSent: req.headers.authorization }));
      },
    });
  });

  afterAll(() => recorder?.close());

  it.runIf(dbMode() === 'pglite')('embedded: generates a 0600 key file, says to back it up, and never writes a value to stderr', async () => {
    const boot = await bootstrappedDatabase();
    const server = await spawnServer({ ...boot.env, WEFT_ENCRYPTION_KEY: '', LOG_LEVEL: 'debug', WEFT_ALLOW_PRIVATE_NETWORK: 'true' }, await freePort());
    try {
      const keyFile = path.join(boot.where.dataDir!, 'secrets.key');
      expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(server.output().match(/back it up together with the data directory/g)).toHaveLength(1);
      const texts = await exercise(server.url, boot.apiKey, boot.workspaceId, recorder);
      expect(texts.join('\n')).toContain('rejected ***');
      for (const text of [...texts, server.output()]) {
        expect(text).not.toContain(VALUE);
        expect(text).not.toContain(VALUE.slice(4, 12));
      }
    } finally {
      await stop(server.child);
    }
  }, 120_000);

  it.runIf(dbMode() === 'postgres')('PostgreSQL: a server without WEFT_ENCRYPTION_KEY refuses to start, saying why', async () => {
    const boot = await bootstrappedDatabase();
    const refused = await runCli(['serve'], { ...boot.env, WEFT_ENCRYPTION_KEY: '', PORT: String(await freePort()) });
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain('WEFT_ENCRYPTION_KEY is not set');
  }, 60_000);

  it.runIf(dbMode() === 'postgres' && Boolean(process.env.TEST_REDIS_URL))('scaled: a separate worker process resolves secrets for async runs', async () => {
    recorder.requests.length = 0;
    const boot = await bootstrappedDatabase();
    const env = { ...boot.env, REDIS_URL: process.env.TEST_REDIS_URL, WEFT_ALLOW_PRIVATE_NETWORK: 'true' };
    const api = await spawnServer(env, await freePort(), 'api');
    const worker = await spawnServer({ ...env, LOG_LEVEL: 'debug' }, 0, 'worker');
    try {
      const texts = await exercise(api.url, boot.apiKey, boot.workspaceId, recorder);
      // The async run of the first workflow ran in the worker: it reached the recorder with the value.
      expect(worker.output()).toContain('Weft worker running');
      for (const text of [...texts, api.output(), worker.output()]) expect(text).not.toContain(VALUE);
    } finally {
      await stop(api.child);
      await stop(worker.child);
    }
  }, 120_000);
});
