// Where a process's resident memory is, read from /proc/<pid>/smaps (Linux): the figure behind compare's
// RSS rows. Each mapping's Rss goes to one part:
//   wasm      readable anonymous mappings that touch an inaccessible one of 1 GiB or more: V8 places each
//             WebAssembly memory (PGlite's database) between guard regions that large, and nothing else does
//   malloc    [heap] and glibc's per-thread arenas: anonymous mappings of exactly 64 MiB or 128 MiB, and the
//             used part of one (read-write, at a 64 MiB boundary, followed by its inaccessible rest up to 64 MiB)
//   code      file-backed executable mappings (node, shared libraries, native addons)
//   files     other file-backed mappings (read-only data of the same, mapped files)
//   stack     the main thread's [stack] (other threads' stacks are anonymous)
//   anonymous the rest: the V8 heaps (main thread, workers, sandbox isolates), thread stacks, other mmaps
import fs from 'node:fs';

export interface MemoryBreakdown {
  rssMb: number;
  wasmMb: number;
  mallocMb: number;
  codeMb: number;
  filesMb: number;
  stackMb: number;
  anonymousMb: number;
  /** The largest anonymous mappings' resident MB, for telling a V8 heap from a wasm memory by eye. */
  largestAnonymousMb: number[];
}

const GIB = 1024 ** 3;

/** The breakdown of one process, or undefined without /proc (not Linux) or once the process is gone. */
export function memoryBreakdown(pid: number | undefined): MemoryBreakdown | undefined {
  if (!pid) return undefined;
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = { wasm: 0, malloc: 0, code: 0, files: 0, stack: 0, anonymous: 0 };
  const anon: number[] = [];
  const maps: { start: number; end: number; perms: string; path: string; rss: number }[] = [];
  for (const line of text.split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+)\s+(\S+)\s+\S+\s+\S+\s+\d+\s*(.*)$/.exec(line);
    if (header) {
      maps.push({ start: parseInt(header[1], 16), end: parseInt(header[2], 16), perms: header[3], path: header[4].trim(), rss: 0 });
      continue;
    }
    const rssLine = /^Rss:\s+(\d+) kB/.exec(line);
    if (rssLine && maps.length) maps[maps.length - 1].rss = Number(rssLine[1]);
  }
  const ARENA = 64 * 1024 ** 2;
  // glibc reserves a thread's arena as 64 MiB at a 64 MiB boundary and opens it for writing as it grows.
  const arenaStart = (m: (typeof maps)[number], next: (typeof maps)[number] | undefined) =>
    m.path === '' && m.perms.startsWith('rw') && m.start % ARENA === 0 && !!next && next.path === '' && next.perms.startsWith('---')
    && next.start === m.end && next.end - m.start === ARENA;
  const guard = (m: (typeof maps)[number] | undefined) => !!m && m.path === '' && m.perms.startsWith('---') && m.end - m.start >= GIB;
  maps.forEach((m, i) => {
    const size = m.end - m.start;
    const touches = (n: (typeof maps)[number] | undefined) => guard(n) && (n!.end === m.start || n!.start === m.end);
    if (m.path === '[heap]') kb.malloc += m.rss;
    else if (m.path === '[stack]') kb.stack += m.rss;
    else if (m.path.startsWith('/')) {
      if (m.perms.includes('x')) kb.code += m.rss;
      else kb.files += m.rss;
    } else if (m.path === '' && m.perms.startsWith('rw') && (touches(maps[i - 1]) || touches(maps[i + 1]))) kb.wasm += m.rss;
    else if (size === 64 * 1024 ** 2 || size === 128 * 1024 ** 2 || arenaStart(m, maps[i + 1])) kb.malloc += m.rss;
    else {
      kb.anonymous += m.rss;
      if (m.rss > 0) anon.push(m.rss);
    }
  });
  const mb = (x: number) => Math.round(x / 1024);
  return {
    rssMb: mb(Object.values(kb).reduce((a, b) => a + b, 0)),
    wasmMb: mb(kb.wasm), mallocMb: mb(kb.malloc), codeMb: mb(kb.code), filesMb: mb(kb.files), stackMb: mb(kb.stack),
    anonymousMb: mb(kb.anonymous),
    largestAnonymousMb: anon.sort((a, b) => b - a).slice(0, 5).map(mb),
  };
}

/** One line for the report: `rss 258 = wasm 90 + malloc 40 + ...`. */
export function describeBreakdown(b: MemoryBreakdown): string {
  return `rss ${b.rssMb} MB = wasm ${b.wasmMb} + malloc ${b.mallocMb} + code ${b.codeMb} + files ${b.filesMb} + anonymous ${b.anonymousMb}`
    + ` (largest ${b.largestAnonymousMb.join(', ')}) + stack ${b.stackMb}`;
}

/** `node --import tsx bench/compare-memory.ts <pid>`: the breakdown of a running process, as JSON. */
if (process.argv[1]?.endsWith('compare-memory.ts') && process.argv[2]) {
  const b = memoryBreakdown(Number(process.argv[2]));
  process.stdout.write(JSON.stringify(b ?? { error: 'no such process or no /proc' }) + '\n');
  if (b) process.stderr.write(describeBreakdown(b) + '\n');
}
