import fs from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import reactHooks from 'eslint-plugin-react-hooks';

// Area folders under src/ (each owns its routes, service and SQL). Shared infrastructure folders are not areas.
const shared = new Set(['http', 'db', 'engine', 'queue', 'sandbox', 'net', 'cli']);
const areas = fs.readdirSync('src', { withFileTypes: true })
  .filter((d) => d.isDirectory() && !shared.has(d.name))
  .map((d) => d.name);

// No folder under src/ (the CLI's included) reaches into another area's store or routes: areas call each
// other only through the services the composition root hands them.
const folders = fs.readdirSync('src', { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
const areaZones = folders.flatMap((folder) => areas.filter((area) => area !== folder).map((area) => ({
  target: `./src/${folder}`,
  from: [`./src/${area}/store.ts`, `./src/${area}/routes.ts`],
  message: `src/${folder} may not use another area's store or routes; ask for its service through the composition root (src/compose.ts).`,
})));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.weft/**', '.test-cache/**', 'coverage/**', 'web/dist/**', 'web/node_modules/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', fetch: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', Blob: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', performance: 'readonly', structuredClone: 'readonly', setImmediate: 'readonly', queueMicrotask: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: areaZones }],
    },
  },
  {
    // The engine is pure: zod and its own files only (no node:*, no other area, no other package).
    files: ['src/engine/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ regex: '^(?!zod$|\\.\\.?/)', message: 'src/engine imports only zod and its own files.' }],
      }],
      'import-x/no-restricted-paths': ['error', {
        zones: [{ target: './src/engine', from: './src', except: ['./engine'], message: 'src/engine imports only zod and its own files.' }],
      }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    // The dashboard (browser code): the rules of hooks, and no Node built-ins.
    files: ['web/src/**/*.{ts,tsx}'],
    ...reactHooks.configs.flat.recommended,
    languageOptions: { globals: { window: 'readonly', document: 'readonly', navigator: 'readonly', localStorage: 'readonly', fetch: 'readonly', URL: 'readonly', URLSearchParams: 'readonly', FormData: 'readonly' } },
    rules: {
      ...reactHooks.configs.flat.recommended.rules,
      'no-restricted-imports': ['error', { patterns: [{ regex: '^node:', message: 'web/src runs in the browser.' }] }],
    },
  },
);
