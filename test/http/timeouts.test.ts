// The HTTP server does not keep silent or slow connections forever (security finding 8).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_CONNECTION_TIMEOUT_MS: '800', WEFT_KEEP_ALIVE_TIMEOUT_MS: '500', WEFT_REQUEST_TIMEOUT_MS: '5000' } });
});
afterAll(async () => {
  await t?.close();
});

/** Opens a raw connection, optionally writes, and resolves with how long the server kept it open. */
function heldFor(write?: string): Promise<number> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      if (write) socket.write(write);
    });
    socket.on('data', () => undefined);
    socket.on('close', () => resolve(performance.now() - started));
    socket.on('error', () => undefined);
    setTimeout(() => {
      socket.destroy();
      reject(new Error('the server kept the connection open'));
    }, 10_000);
  });
}

describe('HTTP timeouts', () => {
  it('closes a connection that never sends a request', async () => {
    const ms = await heldFor();
    expect(ms).toBeLessThan(5_000);
  });

  it('closes an idle keep-alive connection after its answer', async () => {
    const ms = await heldFor('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    expect(ms).toBeLessThan(5_000);
  });

  it('applies the configured request timeout to the server', () => {
    expect(t.server.app.server.requestTimeout).toBe(5_000);
    expect(t.server.app.server.keepAliveTimeout).toBe(500);
  });
});
