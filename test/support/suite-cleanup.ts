import { afterAll } from 'vitest';
import { removeSuiteTempDirs } from './temp-dirs.js';

// Runs before each test file (vitest `setupFiles`); registered first, this hook runs after the file's own
// afterAll hooks (which close its servers), and frees the data directories the file made.
afterAll(() => removeSuiteTempDirs());
