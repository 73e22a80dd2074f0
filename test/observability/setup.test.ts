// Configuration of observability, and the worker's own /metrics listener (no database needed).
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import type { Database } from '../../src/db/database.js';
import { createObservability, workerMetricsListener } from '../../src/observability/index.js';
import { isLoopbackHost } from '../../src/observability/http.js';
import { runCostUsd } from '../../src/observability/observer.js';
import { freePort } from '../support/cli.js';
import { dbMode, request, startTestServer } from '../support/harness.js';
import { parseMetrics, total } from './metrics-text.js';

describe.skipIf(dbMode() === 'postgres')('observability setup', () => {
  it('logs at info by default; traces only with an OTLP endpoint; /metrics open without a token', () => {
    const c = loadConfig({});
    expect(c.logLevel).toBe('info');
    expect(c.observability).toEqual({ metricsToken: undefined, metricsPort: undefined, otlpTracesUrl: undefined, serviceName: 'weft' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).observability.otlpTracesUrl).toBe('http://collector:4318/v1/traces');
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom' }).observability.otlpTracesUrl)
      .toBe('http://b:4318/custom');
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
  });

  it('costs a run at its base charge plus what its AI blocks report', () => {
    const block = (type: string, output: unknown, status: 'success' | 'replayed' = 'success') =>
      ({ key: type, blockId: type, name: type, type, status, startedAt: new Date().toISOString(), durationMs: 1, output });
    expect(runCostUsd([block('function', { value: 1 })])).toBe(0.005);
    expect(runCostUsd([block('agent', { cost: 0.0012 }), block('router', { cost: 0.0003 }), block('agent', { cost: 1 }, 'replayed')])).toBe(0.0065);
  });

  it('serves /metrics on WEFT_METRICS_PORT in a worker process, behind the token', async () => {
    const port = await freePort();
    const config = loadConfig({ WEFT_METRICS_PORT: String(port), WEFT_METRICS_TOKEN: 'tok' });
    const db = { mode: 'postgres', poolStats: () => ({ total: 3, idle: 2, waiting: 0 }) } as unknown as Database;
    const ctx: AppContext = { config, db, log: pino({ level: 'silent' }), role: 'worker' };
    const obs = createObservability(ctx, { queueDepth: async () => 7 });
    const listener = workerMetricsListener(ctx, obs)!;
    await listener.start?.();
    try {
      obs.runStarted({ trigger: 'api', waitMs: 120 });
      const url = `http://127.0.0.1:${port}/metrics`;
      let r = await request(url, 'GET').catch(() => undefined);
      for (let i = 0; i < 50 && !r; i++) r = await new Promise((res) => setTimeout(res, 20)).then(() => request(url, 'GET').catch(() => undefined));
      expect(r?.status).toBe(401);
      const ok = await request(url, 'GET', undefined, { authorization: 'Bearer tok' });
      expect(ok.status).toBe(200);
      const m = parseMetrics(ok.text);
      expect(total(m, 'weft_queue_depth')).toBe(7);
      expect(total(m, 'weft_db_pool_connections', { state: 'total' })).toBe(3);
      expect(total(m, 'weft_queue_wait_seconds_count', { trigger: 'api' })).toBe(1);
      expect((await request(`http://127.0.0.1:${port}/other`, 'GET')).status).toBe(404);
    } finally {
      await listener.stop?.();
      await obs.close();
    }
  });

  it('tells loopback listeners from others', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]', '::ffff:127.0.0.1']) expect({ h, loop: isLoopbackHost(h) }).toEqual({ h, loop: true });
    for (const h of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'example.com', '128.0.0.1', '::ffff:10.0.0.1']) expect({ h, loop: isLoopbackHost(h) }).toEqual({ h, loop: false });
  });

  it('a worker listening beyond loopback without WEFT_METRICS_TOKEN serves no metrics (403) and says so at start-up', async () => {
    const port = await freePort();
    const config = loadConfig({ WEFT_METRICS_PORT: String(port), HOST: '0.0.0.0' });
    const lines: { msg: string; level: number }[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const db = { mode: 'postgres', poolStats: () => ({ total: 1, idle: 1, waiting: 0 }) } as unknown as Database;
    const ctx: AppContext = { config, db, log, role: 'worker' };
    const listener = workerMetricsListener(ctx, createObservability(ctx, { queueDepth: async () => 0 }))!;
    await listener.start?.();
    try {
      const url = `http://127.0.0.1:${port}/metrics`;
      let r = await request(url, 'GET').catch(() => undefined);
      for (let i = 0; i < 50 && !r; i++) r = await new Promise((res) => setTimeout(res, 20)).then(() => request(url, 'GET').catch(() => undefined));
      expect(r?.status).toBe(403);
      expect(r?.body).toEqual({ error: expect.stringContaining('WEFT_METRICS_TOKEN') });
      expect(r?.text).not.toContain('weft_');
      expect((await request(url, 'GET', undefined, { authorization: 'Bearer anything' })).status).toBe(403);
      const warned = lines.filter((l) => l.level === 40 && l.msg.includes('/metrics is off'));
      expect(warned).toHaveLength(1);
      expect(warned[0]!.msg).toContain('Set WEFT_METRICS_TOKEN');
    } finally {
      await listener.stop?.();
    }
  });

  it('the API server beyond loopback: /metrics is 403 without a token, behind the token with one; open on loopback', async () => {
    const wide = await startTestServer({ config: { host: '0.0.0.0' } });
    try {
      const r = await request(`${wide.url}/metrics`, 'GET');
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ error: expect.stringMatching(/not on loopback, and WEFT_METRICS_TOKEN is not set/) });
    } finally {
      await wide.close();
    }
    const guarded = await startTestServer({ env: { WEFT_METRICS_TOKEN: 'wide-token' }, config: { host: '0.0.0.0' } });
    try {
      expect((await request(`${guarded.url}/metrics`, 'GET')).status).toBe(401);
      expect((await request(`${guarded.url}/metrics`, 'GET', undefined, { authorization: 'Bearer wide-token' })).status).toBe(200);
    } finally {
      await guarded.close();
    }
    const local = await startTestServer();
    try {
      const r = await request(`${local.url}/metrics`, 'GET');
      expect(r.status).toBe(200);
      expect(r.text).toContain('weft_http_request_duration_seconds');
    } finally {
      await local.close();
    }
  }, 60_000);
});
