// Makes the embedded database's template (src/db/embedded-template.ts): a data directory created and migrated
// once here, which a first start copies instead of running initdb and every migration (about 5 s). Runs after
// tsc in `npm run build`. A failure only warns: a first start without a template creates the database itself.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

let partial;
try {
  const { schemaFingerprint, templatesDir, markComplete } = await import('../dist/db/embedded-template.js');
  const root = templatesDir();
  const name = schemaFingerprint();
  const dir = path.join(root, name);
  if (fs.existsSync(path.join(dir, 'complete'))) process.exit(0);
  partial = path.join(root, `${name}.partial-${process.pid}`);
  // Templates of other migrations are stale: only the current one is kept.
  fs.rmSync(root, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  execFileSync(process.execPath, ['--no-node-snapshot', 'dist/db/create-embedded.js', partial], { stdio: ['ignore', 'ignore', 'pipe'] });
  // What a data directory holds beside pgdata is the server's own (its lock, the secrets key): not in a template.
  for (const entry of fs.readdirSync(partial)) if (entry !== 'pgdata') fs.rmSync(path.join(partial, entry), { recursive: true, force: true });
  markComplete(partial);
  fs.renameSync(partial, dir);
} catch (err) {
  if (partial) fs.rmSync(partial, { recursive: true, force: true });
  const detail = err instanceof Error && 'stderr' in err ? String(err.stderr) : String(err);
  process.stderr.write(`build: no embedded database template (a first start will create the database itself, about 5 s): ${detail.trim().slice(0, 2000)}\n`);
}
