// Where a process's resident memory is, read from /proc/<pid>/smaps (Linux): the figure behind compare's
// RSS rows. Each mapping's Rss goes to one part:
//   wasm      anonymous mappings of 1 GiB or more: V8 reserves each WebAssembly memory (PGlite's database,
//             one per database thread) that large with its guard region, and nothing else maps that much
//   malloc    [heap] and the other anonymous mappings of exactly 64 MiB or 128 MiB (glibc's per-thread arenas)
//   code      file-backed executable mappings (node, shared libraries, native addons)
//   files     other file-backed mappings (read-only data of the same, mapped files)
//   stacks    [stack] and thread stacks are among `anonymous`; [stack] alone here
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
  let current: { size: number; perms: string; path: string } | undefined;
  for (const line of text.split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+)\s+(\S+)\s+\S+\s+\S+\s+(\d+)\s*(.*)$/.exec(line);
    if (header) {
      current = { size: parseInt(header[2], 16) - parseInt(header[1], 16), perms: header[3], path: header[5].trim() };
      continue;
    }
    const rssLine = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rssLine || !current) continue;
    const rss = Number(rssLine[1]);
    const { size, perms, path } = current;
    if (path === '[heap]') kb.malloc += rss;
    else if (path === '[stack]') kb.stack += rss;
    else if (path.startsWith('/')) {
      if (perms.includes('x')) kb.code += rss;
      else kb.files += rss;
    } else if (size >= GIB) kb.wasm += rss;
    else if (size === 64 * 1024 ** 2 || size === 128 * 1024 ** 2) kb.malloc += rss;
    else {
      kb.anonymous += rss;
      if (rss > 0) anon.push(rss);
    }
  }
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
