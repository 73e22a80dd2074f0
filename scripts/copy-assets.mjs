// tsc compiles TypeScript only: copy the SQL migrations next to the compiled migrator.
import fs from 'node:fs';
fs.cpSync('src/db/migrations', 'dist/db/migrations', { recursive: true });
// Marks the build as current for `npm start` (scripts/build-if-stale.mjs).
fs.writeFileSync('dist/.build-stamp', new Date().toISOString());
