import net from 'node:net';

/**
 * A raw HTTP server answering `?n=N` with a chunked body of N one-byte chunks ("1\r\na\r\n" each), as a hostile
 * server sends it; it writes with backpressure, so N may be millions.
 */
export function tinyChunkServer(): net.Server {
  return net.createServer((sock) => {
    sock.on('error', () => undefined);
    sock.once('data', (d) => {
      const n = Number(/[?&]n=(\d+)/.exec(d.toString())?.[1] ?? 0);
      sock.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n');
      const block = Buffer.from('1\r\na\r\n'.repeat(1000));
      let sent = 0;
      const go = () => {
        while (sent < n) {
          const k = Math.min(1000, n - sent);
          sent += k;
          if (!sock.write(k === 1000 ? block : block.subarray(0, 6 * k))) {
            sock.once('drain', go);
            return;
          }
        }
        sock.end('0\r\n\r\n');
      };
      go();
    });
  });
}
