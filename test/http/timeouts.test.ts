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

/**
 * Opens a raw connection, optionally writes, and resolves with who ended it: 'server' when the server
 * closed it; the test gives up (and ends it itself) only long after the configured timeouts.
 */
function endedBy(write?: string): Promise<'server'> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      if (write) socket.write(write);
    });
    socket.on('data', () => undefined);
    socket.on('close', () => resolve('server'));
    socket.on('error', () => undefined);
    setTimeout(() => {
      reject(new Error('the server kept the connection open'));
      socket.destroy();
    }, 10_000);
  });
}

describe('HTTP timeouts', () => {
  it('closes a connection that never sends a request', async () => {
    expect(await endedBy()).toBe('server');
  });

  it('closes an idle keep-alive connection after its answer', async () => {
    expect(await endedBy('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n')).toBe('server');
  });

  it('applies the configured request timeout to the server', () => {
    expect(t.server.app.server.requestTimeout).toBe(5_000);
    expect(t.server.app.server.keepAliveTimeout).toBe(500);
  });
});
