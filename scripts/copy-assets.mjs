// tsc compiles TypeScript only: copy the SQL migrations next to the compiled migrator. The directory is replaced,
// not merged: a migration renamed or removed in src/ must not linger in dist/, where new databases would apply it.
import fs from 'node:fs';
fs.rmSync('dist/db/migrations', { recursive: true, force: true });
fs.cpSync('src/db/migrations', 'dist/db/migrations', { recursive: true });
// Marks the build as current for `npm start` (scripts/build-if-stale.mjs).
fs.writeFileSync('dist/.build-stamp', new Date().toISOString());
