// `npm start` builds only when dist/ is older than the sources it is built from: a restart on an
// unchanged checkout starts at once instead of recompiling every time.
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const stamp = 'dist/.build-stamp';
// web/ holds the dashboard's sources (its dist/ is output, skipped below)
const inputs = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'web'];
const skip = new Set(['web/dist', 'web/node_modules']);

function newest(p) {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let latest = st.mtimeMs;
  for (const entry of fs.readdirSync(p)) {
    const child = path.join(p, entry);
    if (!skip.has(child)) latest = Math.max(latest, newest(child));
  }
  return latest;
}

const built = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
if (inputs.some((p) => fs.existsSync(p) && newest(p) > built)) {
  execSync('npm run build', { stdio: 'inherit' });
}
