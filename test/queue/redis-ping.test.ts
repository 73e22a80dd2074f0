import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { pingRedis } from '../../src/queue/redis-ping.js';

describe('pingRedis', () => {
  it('is false for a port nobody listens on and for a URL it cannot read', async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise((r) => server.close(r));
    expect(await pingRedis(`redis://127.0.0.1:${port}`)).toBe(false);
    expect(await pingRedis('not a url')).toBe(false);
  });

  it('is false for a server that answers with an error (e.g. a wrong password), and true for +PONG', async () => {
    let reply = '-WRONGPASS invalid password\r\n';
    const server = net.createServer((s) => s.once('data', () => s.write(reply)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      expect(await pingRedis(`redis://:secret@127.0.0.1:${port}`)).toBe(false);
      reply = '+PONG\r\n';
      expect(await pingRedis(`redis://127.0.0.1:${port}`)).toBe(true);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it.skipIf(!process.env.TEST_REDIS_URL)('is true for the Redis in TEST_REDIS_URL (skipped without it)', async () => {
    expect(await pingRedis(process.env.TEST_REDIS_URL!)).toBe(true);
  });
});
