// The AI suites' server: the whole app from the test harness, with direct handles on the gateway (its
// ledger) and the database for assertions that the HTTP surface does not expose.
import type { AiGateway } from '../../src/ai/gateway.js';
import type { Config } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createKey } from '../support/accounts.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { request, startTestServer, type TestResponse } from '../support/harness.js';

export { request, type TestResponse };

export interface AiTestServer {
  db: Database;
  gateway: AiGateway;
  config: Config;
  url: string;
  /** A workspace key of `workspaceId` (billed to `workspace:<workspaceId>`). */
  apiKey: string;
  workspaceId: string;
  userId: string;
  /** A new key of the admin user: a personal key bills `user:<userId>`. */
  createKey(type: 'personal' | 'workspace'): Promise<string>;
  /** fetch against the server with the workspace key unless `headers` overrides it. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  close(): Promise<void>;
}

/** The whole server (every area, real keys and limits), with handles on the AI gateway and the database. */
export async function startAiServer(opts: { env?: Record<string, string> } = {}): Promise<AiTestServer> {
  const t = await startTestServer({ env: opts.env });
  return {
    db: t.server.ctx.db,
    gateway: t.server.services.ai,
    config: t.config,
    url: t.url,
    apiKey: t.apiKey,
    workspaceId: t.workspaceId,
    userId: t.userId,
    createKey: async (type) => (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: t.userId, type })).secret,
    call: t.call,
    close: () => t.close(),
  };
}

/**
 * A suite's fake providers and the server in front of them, for the whole file (`env` added to the server's),
 * with the providers' default reply put back before each test. `ready` is handed both once they are up.
 */
export function aiSuite(opts: { env?: Record<string, string>; ready: (t: AiTestServer, fake: FakeProviders) => Promise<void> | void }): void {
  let t: AiTestServer | undefined;
  let fake: FakeProviders | undefined;
  beforeAll(async () => {
    fake = await startFakeProviders();
    t = await startAiServer({ env: { ...fake.env, ...opts.env } });
    await opts.ready(t, fake);
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });
  beforeEach(() => {
    if (fake) fake.handler = () => ({ text: 'ok', usage: { prompt: 100, completion: 50 } });
  });
}
