import { type ChildProcess, fork } from 'node:child_process';
import { type ResourceLimits, type TransferListItem, Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Starts the worker module `<name>.<ext>` that sits beside `besideUrl` (pass `import.meta.url`): `.js` in the
 * build (`dist/`), `.ts` under vitest and tsx. Node 20 does not apply `--import tsx` hooks inside a worker
 * (the entry fails with "Unknown file extension .ts"), and the parent's execArgv cannot be passed on anyway
 * (`--no-node-snapshot`, used by `npm start` and the tests, is refused for workers). So a `.ts` worker starts
 * from a one-line script that loads the module through tsx's `tsImport`, which does work in a worker.
 */
export function startModuleWorker(
  besideUrl: string, moduleName: string,
  opts: { name: string; workerData?: unknown; transferList?: TransferListItem[]; resourceLimits?: ResourceLimits },
): Worker {
  const ext = path.extname(new URL(besideUrl).pathname);
  const entry = new URL(`./${moduleName}${ext}`, besideUrl);
  const common = { name: opts.name, workerData: opts.workerData, transferList: opts.transferList, resourceLimits: opts.resourceLimits };
  if (ext === '.js' || ext === '.mjs') return new Worker(entry, common);
  if (process.env.WEFT_WORKERS_FROM_BUILD === '1') return new Worker(builtTwin(entry), common);
  const code = `import(${JSON.stringify(tsxEsmApiUrl())}).then((tsx) => tsx.tsImport(${JSON.stringify(entry.href)}, ${JSON.stringify(besideUrl)}))`;
  return new Worker(code, { ...common, eval: true });
}

/**
 * Starts the module `<name>.<ext>` beside `besideUrl` as a child process with an IPC channel (structured clone),
 * found as `startModuleWorker` finds a worker's: the build's `.js`, its built twin under the test suites, or the
 * `.ts` source through tsx (which a child process, unlike a worker, loads with `--import`).
 */
export function startModuleProcess(besideUrl: string, moduleName: string, args: string[], opts: { execArgv?: string[] } = {}): ChildProcess {
  const ext = path.extname(new URL(besideUrl).pathname);
  const entry = new URL(`./${moduleName}${ext}`, besideUrl);
  const execArgv = [...(opts.execArgv ?? [])];
  let file = entry;
  if (ext !== '.js' && ext !== '.mjs') {
    if (process.env.WEFT_WORKERS_FROM_BUILD === '1') file = builtTwin(entry);
    else execArgv.push('--import', 'tsx');
  }
  return fork(file, args, { execArgv, serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

/**
 * `src/<path>.ts` -> `dist/<path>.js`. The test suites set WEFT_WORKERS_FROM_BUILD=1 (vitest.config.ts): their
 * global setup rebuilds a stale `dist/` first, and a worker started through tsx spent about 0.4 s of CPU on a
 * loader thread and on transpiling its modules, for every database thread and ingest worker of the run.
 */
function builtTwin(entry: URL): URL {
  const marker = '/src/';
  const at = entry.pathname.lastIndexOf(marker);
  if (at < 0) throw new Error(`WEFT_WORKERS_FROM_BUILD: ${entry.pathname} is not under src/`);
  const built = new URL(entry.href);
  built.pathname = `${entry.pathname.slice(0, at)}/dist/${entry.pathname.slice(at + marker.length).replace(/\.ts$/, '.js')}`;
  return built;
}

/**
 * URL of tsx's ESM API (`tsx/esm/api`, import condition), read from tsx's exports map: `require.resolve`
 * would give the CommonJS build, whose `tsImport` cannot find its own loader, and vitest offers no
 * `import.meta.resolve`. Only reached when running from TypeScript sources, where tsx (a devDependency) is
 * installed.
 */
function tsxEsmApiUrl(): string {
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve('tsx/package.json');
  const pkg: unknown = require(pkgPath);
  const target = pick(pick(pick(pick(pkg, 'exports'), './esm/api'), 'import'), 'default');
  if (typeof target !== 'string') throw new Error('tsx/package.json has no import entry for ./esm/api');
  return pathToFileURL(path.join(path.dirname(pkgPath), target)).href;
}

function pick(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
