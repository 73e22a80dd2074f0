import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import reactHooks from 'eslint-plugin-react-hooks';

// Every folder under src/ is named here, as an area (it owns tables, a service, its SQL and its routes) or as
// shared infrastructure (no tables of its own). A new folder is a decision: until it is listed, the
// weft/known-folder rule fails on its files (docs/architecture.md, Areas).
const areas = [
  'accounts', 'admin', 'ai', 'audit', 'connectors', 'knowledge', 'limits', 'mcp', 'observability', 'runs',
  'schedules', 'secrets', 'sessions', 'tables', 'webhooks', 'workflows',
];
const shared = ['cli', 'db', 'engine', 'http', 'net', 'queue', 'sandbox'];
const knownFolders = new Set([...areas, ...shared]);

const knownFolder = {
  meta: {
    type: 'problem',
    docs: { description: 'every folder under src/ is listed as an area or a shared folder in eslint.config.js' },
    schema: [],
  },
  create(context) {
    const relative = context.filename.slice(context.cwd.length + 1).split(/[\\/]/);
    const folder = relative[0] === 'src' && relative.length > 2 ? relative[1] : undefined;
    if (folder === undefined || knownFolders.has(folder)) return {};
    return {
      Program(node) {
        context.report({
          node,
          message: `src/${folder} is neither an area nor a shared folder: list it in eslint.config.js (and in docs/architecture.md, Areas).`,
        });
      },
    };
  },
};

// No folder under src/ (the CLI's included) reaches into another area's store or routes: areas call each
// other only through the services the composition root hands them.
const areaZones = [...knownFolders].flatMap((folder) => areas.filter((area) => area !== folder).map((area) => ({
  target: `./src/${folder}`,
  from: [`./src/${area}/store.ts`, `./src/${area}/routes.ts`],
  message: `src/${folder} may not use another area's store or routes; ask for its service through the composition root (src/compose.ts).`,
})));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.weft/**', '.test-cache/**', 'coverage/**', 'web/dist/**', 'web/node_modules/**', 'bench/.scratch/**'] },
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
    plugins: { 'import-x': importX, weft: { rules: { 'known-folder': knownFolder } } },
    settings: {
      // import-x follows an import only into files it may parse: without .ts listed here (and a parser for it)
      // every import of a .ts file is skipped, and no-cycle finds nothing.
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      'weft/known-folder': 'error',
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
