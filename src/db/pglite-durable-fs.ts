/**
 * The embedded database's files, made durable (docs/architecture.md, "Embedded durability"). PGlite starts
 * PostgreSQL with fsync off (`-F`), and its WebAssembly build could not sync anyway: Emscripten's `fdatasync`
 * does nothing, and its Node file system (NODEFS) has no `fsync` operation, so a commit only reached the
 * operating system's page cache. A process crash keeps that; a power cut or a kernel crash does not, and can
 * leave the data directory inconsistent. Here NODEFS gets an `fsync` that syncs the file it is given, and
 * PostgreSQL runs with fsync on and flushes its write-ahead log with `fsync()` (the method that reaches it).
 */
import fs from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';

/** Emscripten's view of an open file, as NODEFS's stream operations receive it. */
interface NodeStream { nfd?: number }
interface NodeFsType {
  stream_ops: { fsync?: (stream: NodeStream) => number };
  tryFSOperation: <T>(op: () => T) => T;
}
type EmscriptenOptions = Parameters<NodeFS['init']>[1];
type PreRun = NonNullable<EmscriptenOptions['preRun']>[number];

/** Syncs each file PostgreSQL asks to sync; tells `onSync` of each (counted for /metrics). */
export class DurableNodeFS extends NodeFS {
  constructor(dataDir: string, private readonly onSync: () => void = () => undefined) {
    super(dataDir);
  }

  override async init(pg: PGlite, opts: EmscriptenOptions) {
    const { emscriptenOpts } = await super.init(pg, opts);
    const installSync: PreRun = (mod) => {
      // Emscripten's declared file system type leaves out NODEFS's own members.
      const nodefs = mod.FS.filesystems.NODEFS as unknown as NodeFsType;
      nodefs.stream_ops.fsync = (stream) => {
        // A failure becomes the errno PostgreSQL expects (it stops rather than trust an unsynced file).
        const fd = stream.nfd;
        if (fd !== undefined) {
          nodefs.tryFSOperation(() => fs.fsyncSync(fd));
          this.onSync();
        }
        return 0;
      };
    };
    // Mounted by NodeFS's own step; each node takes NODEFS's shared stream operations, so this reaches them all.
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), installSync] } };
  }
}

/**
 * PGlite's start parameters for a data directory on disk: fsync on (without PGlite's `-F`), and the write-ahead
 * log flushed with `fsync()`, since Emscripten's `fdatasync()`, PostgreSQL's default there, does nothing.
 */
export function durableStartParams(): string[] {
  return [...PGlite.defaultStartParams.filter((p) => p !== '-F'), '-c', 'fsync=on', '-c', 'wal_sync_method=fsync'];
}
