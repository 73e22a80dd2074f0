// The architecture rules are enforced by the lint configuration: a deliberate violation must fail.
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint();

async function ruleIds(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => m.ruleId ?? 'parse-error');
}

// The first lint of a run resolves and parses the import graph it reaches (import-x/no-cycle reads .ts
// files): seconds on a quiet machine, more while other suites share its two cores.
describe('lint boundaries', { timeout: 180_000 }, () => {
  it('keep the engine pure: no node:* modules and no other area', async () => {
    expect(await ruleIds('src/engine/violation.ts', "import fs from 'node:fs';\nexport const x = fs;\n")).toContain('no-restricted-imports');
    expect(await ruleIds('src/engine/violation.ts', "import { newId } from '../ids.js';\nexport const x = newId;\n")).toContain('import-x/no-restricted-paths');
    expect(await ruleIds('src/engine/blocks/violation.ts', "import pino from 'pino';\nexport const x = pino;\n")).toContain('no-restricted-imports');
    expect(await ruleIds('src/engine/violation.ts', "import { z } from 'zod';\nimport { blockTypes } from './blocks/index.js';\nexport const x = [z, blockTypes];\n")).toEqual([]);
  });

  it('keep areas out of each other\'s stores and routes', async () => {
    expect(await ruleIds('src/runs/violation.ts', "import { findWorkflow } from '../workflows/store.js';\nexport const x = findWorkflow;\n")).toContain('import-x/no-restricted-paths');
    expect(await ruleIds('src/cli/violation.ts', "import { listAllKeys } from '../accounts/store.js';\nexport const x = listAllKeys;\n")).toContain('import-x/no-restricted-paths');
    expect(await ruleIds('src/tables/violation.ts', "import { workflowRoutes } from '../workflows/routes.js';\nexport const x = workflowRoutes;\n")).toContain('import-x/no-restricted-paths');
    // Through its service is fine.
    expect(await ruleIds('src/runs/violation.ts', "import type { WorkflowService } from '../workflows/service.js';\nexport type X = WorkflowService;\n")).toEqual([]);
  });

  it('make a new folder under src/ a decision: listed as an area or a shared folder', async () => {
    expect(await ruleIds('src/newthing/service.ts', 'export const x = 1;\n')).toContain('weft/known-folder');
    expect(await ruleIds('src/connectors/service.ts', 'export const x = 1;\n')).toEqual([]);
    expect(await ruleIds('src/http/helper.ts', 'export const x = 1;\n')).toEqual([]);
    expect(await ruleIds('src/top-level.ts', 'export const x = 1;\n')).toEqual([]);
  });

  it('lets only the files directly in src/ wire routes together', async () => {
    expect(await ruleIds('src/app-violation.ts', "import { workflowRoutes } from './workflows/routes.js';\nexport const x = workflowRoutes;\n")).toEqual([]);
  });
});
