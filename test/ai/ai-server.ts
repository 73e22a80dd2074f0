// An HTTP server with the AI area alone, built the way the composition root builds it: a database
// from the test template, `new AiGateway(db, config.ai, deps)` and `aiRoutes(gateway, accounts)` on a Fastify
// app with the shared HTTP layer (error envelopes, JSON parser, key authentication). Keys are
// verified by a table of test keys, so these suites depend on no other area.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { AiGateway } from '../../src/ai/gateway.js';
import { aiRoutes } from '../../src/ai/routes.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { registerAuth, type AuthContext } from '../../src/http/auth.js';
import { registerErrorHandling } from '../../src/http/errors.js';
import { registerJsonParser } from '../../src/http/json-body.js';
import { pgliteTemplatePath, postgresTemplateName, postgresUrlFor } from '../support/templates.js';

export interface TestResponse {
  status: number;
  headers: Headers;
  // Tests read arbitrary JSON shapes; `any` stays inside the test suite.
  body: any;
  text: string;
}

export async function request(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

export interface AiTestServer {
  db: Database;
  gateway: AiGateway;
  config: Config;
  url: string;
  /** A workspace key of `workspaceId` (billed to `workspace:<workspaceId>`). */
  apiKey: string;
  workspaceId: string;
  userId: string;
  /** A new key: a personal key bills `user:<userId>`. */
  createKey(type: 'personal' | 'workspace'): string;
  /** Errors the routes threw (answered 500 and the like), newest last, for failure messages. */
  errors: Error[];
  /** fetch against the server with the workspace key unless `headers` overrides it. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  close(): Promise<void>;
}

async function freshDatabase(): Promise<{ db: Database; drop: () => Promise<void> }> {
  if (process.env.WEFT_TEST_DB === 'postgres') {
    const base = process.env.TEST_DATABASE_URL;
    if (!base) throw new Error('WEFT_TEST_DB=postgres needs TEST_DATABASE_URL');
    const name = `weft_ai_${randomBytes(6).toString('hex')}`;
    const admin = await connectDatabase({ databaseUrl: base, dataDir: '' });
    await admin.exec(`CREATE DATABASE ${name} TEMPLATE ${postgresTemplateName()}`);
    await admin.close();
    const db = await connectDatabase({ databaseUrl: postgresUrlFor(base, name), dataDir: '' });
    return {
      db,
      drop: async () => {
        await db.close();
        const a = await connectDatabase({ databaseUrl: base, dataDir: '' });
        await a.exec(`DROP DATABASE IF EXISTS ${name}`).catch(() => undefined);
        await a.close();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-ai-test-'));
  const db = await connectDatabase({ dataDir: dir, loadDataDir: new Blob([fs.readFileSync(pgliteTemplatePath())]) });
  return {
    db,
    drop: async () => {
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startAiServer(opts: { env?: Record<string, string> } = {}): Promise<AiTestServer> {
  const config = loadConfig({ LOG_LEVEL: 'silent', ...opts.env });
  const { db, drop } = await freshDatabase();
  const gateway = new AiGateway(db, config.ai);

  const workspaceId = randomUUID();
  const userId = randomUUID();
  const keys = new Map<string, AuthContext>();
  const createKey = (type: 'personal' | 'workspace'): string => {
    const secret = `sk-weft-${randomBytes(16).toString('hex')}`;
    keys.set(secret, { keyId: randomUUID(), keyType: type, userId, keyWorkspaceId: type === 'workspace' ? workspaceId : null });
    return secret;
  };
  const apiKey = createKey('workspace');

  const app = Fastify({
    logger: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(given) ? given : randomUUID();
    },
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('X-Request-Id', req.id);
  });
  registerErrorHandling(app);
  const errors: Error[] = [];
  app.addHook('onError', async (_req, _reply, err) => {
    errors.push(err);
  });
  registerJsonParser(app);
  registerAuth(app, async (secret) => keys.get(secret));
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Weft AI (test)', version: '0' },
      components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' }, bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: jsonSchemaTransform,
  });
  app.get('/api/openapi.json', { schema: { hide: true }, config: { auth: 'none' } }, async () => app.swagger());
  // The routes take nothing from the context: the gateway carries what they need.
  // Who pays, as the accounts area answers it: a workspace key its workspace, a personal key its user.
  const accounts = {
    billedAccount: async (auth: AuthContext) => ({ account: auth.keyType === 'workspace' ? `workspace:${auth.keyWorkspaceId}` : `user:${auth.userId}` }),
  };
  await app.register(aiRoutes(gateway, accounts), { ctx: {} as AppContext });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  let closing: Promise<void> | undefined;
  return {
    db, gateway, config, url, apiKey, workspaceId, userId, createKey, errors,
    call: (method, p, body, headers = {}) => request(url + p, method, body, { 'x-api-key': apiKey, ...headers }),
    close: () => {
      closing ??= (async () => {
        await app.close();
        await drop();
      })();
      return closing;
    },
  };
}
