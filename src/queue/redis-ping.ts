import net from 'node:net';
import tls from 'node:tls';

/** One RESP command as an array of bulk strings. */
function command(...args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

/**
 * Whether the Redis at `url` answers PING (after AUTH and SELECT when the URL names them) within
 * `timeoutMs`. A bare socket rather than a client library: the check must not load BullMQ's client
 * in a process that does not use it, and it never throws.
 */
export function pingRedis(url: string, timeoutMs = 2_000): Promise<boolean> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return Promise.resolve(false);
  }
  const port = Number(u.port || 6379);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const commands: string[] = [];
  if (u.password) commands.push(u.username ? command('AUTH', decodeURIComponent(u.username), decodeURIComponent(u.password)) : command('AUTH', decodeURIComponent(u.password)));
  const db = u.pathname.replace(/^\//, '');
  if (db) commands.push(command('SELECT', db));
  commands.push(command('PING'));
  return new Promise((resolve) => {
    const socket = u.protocol === 'rediss:' ? tls.connect({ host, port, servername: host }) : net.connect({ host, port });
    let answer = '';
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once(u.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => socket.write(commands.join('')));
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
      const lines = answer.split('\r\n').filter((l) => l !== '');
      if (lines.some((l) => l.startsWith('-'))) done(false); // an error reply (wrong password, bad db)
      else if (lines.length >= commands.length) done(lines[commands.length - 1] === '+PONG');
    });
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}
