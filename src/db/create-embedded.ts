/**
 * Creates and migrates a new embedded database: a copy of the build's template, or else in a process of its
 * own, which then exits. initdb and the first migrations leave about 60 MB in the C heap of the thread that
 * ran them (PGlite's file system and the buffers it loads are allocated there): glibc keeps a thread's heap
 * after the thread exits, so a throwaway thread did not give it back, while a process that exits does. The
 * first start is then no larger than a restart (docs/architecture.md, "Embedded database").
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectDatabase } from './connect.js';
import { copyTemplate, currentTemplate } from './embedded-template.js';
import { migrate } from './migrate.js';

const self = fileURLToPath(import.meta.url);
const repoRoot = path.resolve(path.dirname(self), '../..');

/**
 * Creates the database of `dataDir` (WEFT_DATA_DIR): a copy of the build's template when there is one for the
 * current migrations (embedded-template.ts), else in a child process. Rejects with the child's output when it
 * fails. `template: false` always takes the child process.
 */
export async function createEmbeddedDatabase(dataDir: string, opts: { template?: boolean } = {}): Promise<void> {
  const dir = path.resolve(dataDir);
  const template = opts.template === false ? undefined : currentTemplate();
  if (template) {
    await copyTemplate(template, dir);
    return;
  }
  await createInChild(dir);
}

function createInChild(dir: string): Promise<void> {
  // The build runs as it is; from TypeScript sources (tests, tsx) the child loads tsx as this process did.
  // Absolute: the child runs in the repository's folder (where `--import tsx` resolves), not the caller's.
  const args = self.endsWith('.ts') ? ['--import', 'tsx', self, dir] : ['--no-node-snapshot', self, dir];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`creating the embedded database failed (${signal ?? `exit code ${code}`}): ${stderr.trim() || 'no output'}`));
    });
  });
}

async function main(dataDir: string): Promise<void> {
  const db = await connectDatabase({ dataDir });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === self) {
  const dataDir = process.argv[2];
  if (!dataDir) {
    process.stderr.write('usage: create-embedded <data directory>\n');
    process.exit(2);
  }
  main(dataDir).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
