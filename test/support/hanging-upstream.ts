// A local HTTP server for crash tests: it counts requests per path, answers JSON, and leaves unanswered the
// requests its `hold` predicate picks, so a block waits there while the test kills the server running it.
import http from 'node:http';

export interface HangingUpstream {
  url: string;
  /** Requests seen, by path. */
  hits: Record<string, number>;
  /** Called each time a request is held (the test waits on it before killing the server). */
  onHold?: () => void;
  close(): void;
}

export async function startHangingUpstream(opts: { hold: (path: string) => boolean; answer: (path: string) => unknown }): Promise<HangingUpstream> {
  const upstream: HangingUpstream = { url: '', hits: {}, close: () => undefined };
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    upstream.hits[path] = (upstream.hits[path] ?? 0) + 1;
    if (opts.hold(path)) {
      upstream.onHold?.();
      return; // never answered: the process is killed while this block runs
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(opts.answer(path)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  upstream.url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  upstream.close = () => {
    server.closeAllConnections();
    server.close();
  };
  return upstream;
}
