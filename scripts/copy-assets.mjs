// tsc compiles TypeScript only: copy the SQL migrations next to the compiled migrator.
import fs from 'node:fs';
fs.cpSync('src/db/migrations', 'dist/db/migrations', { recursive: true });
