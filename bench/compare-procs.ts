// Child processes of `bench/compare.ts`: spawned, tracked, measured (RSS), and all stopped when the bench
// ends, fails, or is interrupted (Ctrl-C, SIGTERM), so no server outlives a run.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export const root = path.resolve(import.meta.dirname, '..');

export interface Proc {
  name: string;
  child: ChildProcess;
  /** The last few kilobytes of its stdout and stderr, for error messages. */
  output: () => string;
}

const live = new Set<Proc>();
const cleanups: (() => Promise<void> | void)[] = [];

/** Spawns a tracked child; its output is kept (the tail) and never reaches the bench's stdout. */
export function start(name: string, command: string, args: string[], opts: SpawnOptions = {}): Proc {
  const child = spawn(command, args, { cwd: root, stdio: ['pipe', 'pipe', 'pipe'], ...opts });
  let tail = '';
  const keep = (d: Buffer) => {
    tail = (tail + d.toString()).slice(-8000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // A write to a child that already died must not crash the bench.
  child.stdin?.on('error', () => undefined);
  const proc: Proc = { name, child, output: () => tail };
  live.add(proc);
  child.once('exit', () => live.delete(proc));
  return proc;
}

/** Resolves with the first stdout line of `proc` parsed as JSON (how the helper servers report their port). */
export function firstJsonLine<T>(proc: Proc, timeoutMs = 30_000): Promise<T> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`${proc.name} printed nothing in ${timeoutMs} ms:\n${proc.output()}`)), timeoutMs);
    const onData = (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      proc.child.stdout?.off('data', onData);
      try {
        resolve(JSON.parse(buf.slice(0, nl)) as T);
      } catch {
        reject(new Error(`${proc.name} printed ${buf.slice(0, nl)}`));
      }
    };
    proc.child.stdout?.on('data', onData);
    proc.child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${proc.name} exited (${code}) before it was ready:\n${proc.output()}`));
    });
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stop(proc: Proc, graceMs = 35_000): Promise<void> {
  const { child } = proc;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Registers work to undo at the end (temporary directories, scratch databases); run last-registered first. */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

let cleaning: Promise<void> | undefined;
/** Stops every live child and runs the cleanups; safe to call more than once. */
export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all([...live].map((p) => stop(p, 10_000)));
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        process.stderr.write(`compare: cleanup failed: ${(err as Error).message}\n`);
      }
    }
  })();
  return cleaning;
}

/** Ctrl-C, SIGTERM and a crash stop the children before the bench exits; plain exit kills what is left. */
export function installExitHandlers(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\ncompare: ${signal}, stopping the servers\n`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }
  process.once('uncaughtException', (err) => {
    process.stderr.write(`compare: ${err.stack ?? String(err)}\n`);
    void cleanupAll().finally(() => process.exit(1));
  });
  // Last resort (process.exit from elsewhere): nothing asynchronous runs here, so kill outright.
  process.on('exit', () => {
    for (const p of live) p.child.kill('SIGKILL');
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Resident set size of a process in MB, current (VmRSS) and peak (VmHWM), from /proc. */
export function rss(pid: number | undefined): { rssMb: number; peakMb: number } | undefined {
  if (!pid) return undefined;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMb: Math.round(kb('VmRSS') / 1024), peakMb: Math.round(kb('VmHWM') / 1024) };
  } catch {
    return undefined; // no /proc (not Linux) or the process is gone
  }
}

/**
 * CPU time a process has used so far, in ms: all its threads, and its main thread alone (the thread whose id
 * is the pid). /proc counts in clock ticks of USER_HZ, which Linux fixes at 100 a second for user space.
 */
export function cpuMs(pid: number | undefined): { totalMs: number; mainMs: number } | undefined {
  if (!pid) return undefined;
  const ticks = (file: string) => {
    const stat = fs.readFileSync(file, 'utf8');
    // utime and stime are fields 14 and 15; the command name before them may hold spaces, so count after ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  try {
    return { totalMs: ticks(`/proc/${pid}/stat`) * 10, mainMs: ticks(`/proc/${pid}/task/${pid}/stat`) * 10 };
  } catch {
    return undefined; // no /proc (not Linux) or the process is gone
  }
}

// One keep-alive agent for the bench's own requests (set-up, enqueueing async runs, polling): cheap per
// request, so the bench's client side takes as little of the shared CPU as it can.
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

export interface Answer { status: number; text: string; json: () => any }

/** A plain HTTP/1.1 request over the keep-alive agent. */
export function request(method: string, url: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(url, {
      method, agent,
      headers: { ...headers, ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
    }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString();
        resolve({ status: res.statusCode ?? 0, text, json: () => JSON.parse(text) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${url}: no answer in 60 s`)));
    req.end(payload);
  });
}

/** Polls `url` until it answers 200; resolves with the milliseconds from `since` (performance.now()). */
export async function waitFor200(url: string, proc: Proc, since: number, timeoutMs = 120_000): Promise<number> {
  const deadline = since + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited (${proc.child.exitCode}):\n${proc.output()}`);
    try {
      // A fresh connection each time: the agent's sockets are not for a server that is still starting.
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.get(url, { agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.setTimeout(2000, () => req.destroy(new Error('timeout')));
      });
      if (status === 200) return performance.now() - since;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) throw new Error(`${proc.name} did not answer ${url} in ${timeoutMs} ms:\n${proc.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The processes below `pid` (children, their children, ...), with the command each runs. */
export function descendants(pid: number): { pid: number; command: string }[] {
  const children = new Map<number, number[]>();
  const commands = new Map<number, string>();
  for (const entry of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      // Field 4 of /proc/<pid>/stat, after the parenthesised command name, is the parent pid.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
      // Named by the script it runs (a child's arguments may be long: the sandbox process gets its options as JSON).
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      commands.set(Number(entry), path.basename(argv.find((a) => /\.(m?js|ts)$/.test(a)) ?? argv[0] ?? ''));
    } catch {
      // gone meanwhile
    }
  }
  const out: { pid: number; command: string }[] = [];
  const stack = [...(children.get(pid) ?? [])];
  while (stack.length) {
    const p = stack.pop()!;
    out.push({ pid: p, command: commands.get(p) ?? '' });
    stack.push(...(children.get(p) ?? []));
  }
  return out;
}

/** The RSS of a process and every process below it (a server may run parts of itself in child processes). */
export function treeRssMb(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  let total = rss(pid)?.rssMb ?? 0;
  for (const d of descendants(pid)) total += rss(d.pid)?.rssMb ?? 0;
  return total;
}

/**
 * The RSS of a process plus the private pages of every process below it, in MB: the tree's resident memory with
 * the pages a child shares with it (the node binary and libraries the sandbox process maps again) counted once,
 * where the RSS sum counts them in each process. Unlike PSS it does not shrink when unrelated processes (the bench's
 * own node processes) map the same files.
 */
export function treeRssSharedOnceMb(pid: number | undefined): number | undefined {
  const root = rss(pid)?.rssMb;
  if (!pid || root === undefined) return undefined;
  let kb = 0;
  for (const d of descendants(pid)) {
    try {
      const rollup = fs.readFileSync(`/proc/${d.pid}/smaps_rollup`, 'utf8');
      for (const field of ['Private_Clean', 'Private_Dirty']) kb += Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
    } catch {
      // gone meanwhile, or no smaps_rollup (Linux before 4.14)
    }
  }
  return root + Math.round(kb / 1024);
}

/** Bytes on disk under `dir` (allocated blocks, as `du` counts them), in MB. */
export function diskMb(dir: string): number {
  let bytes = 0;
  const walk = (p: string) => {
    const st = fs.lstatSync(p);
    bytes += st.blocks * 512;
    if (st.isDirectory()) for (const e of fs.readdirSync(p)) walk(`${p}/${e}`);
  };
  walk(dir);
  return Math.round(bytes / 1024 ** 2);
}

/** One unlabelled sample from a Prometheus text page (a server's /metrics); undefined when it is not there or the page does not answer 200. */
export async function metricValue(metricsUrl: string, name: string): Promise<number | undefined> {
  const r = await request('GET', metricsUrl);
  if (r.status !== 200) return undefined;
  const line = r.text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(line.indexOf(' ') + 1)) : undefined;
}
