// `weft workflows deploy|list` with a webhook block: the list shows the trigger URL while deployed.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { freshDatabase } from '../support/harness.js';
import { echo } from './support.js';
import { runTempDir } from '../support/temp-dirs.js';

describe('weft workflows list', () => {
  it('shows the webhook URL of a deployed workflow (WEFT_BASE_URL as its base)', async () => {
    const where = await freshDatabase();
    const env = { WEFT_DATA_DIR: where.dataDir, DATABASE_URL: where.databaseUrl, WEFT_BASE_URL: 'https://hooks.example.com' };
    expect((await runCli(['setup', '--json'], env)).code).toBe(0);
    const file = path.join(runTempDir('wh-cli-'), 'hook.json');
    fs.writeFileSync(file, JSON.stringify({ name: 'cli-hook', ...echo({ path: 'cli-hook' }) }));
    const deployed = await runCli(['workflows', 'deploy', file, '--workspace', 'default', '--json'], env);
    expect(deployed.code, deployed.stderr).toBe(0);
    const list = await runCli(['workflows', 'list', '--workspace', 'default', '--json'], env);
    expect(JSON.parse(list.stdout)[0].webhookUrl).toBe('https://hooks.example.com/api/webhooks/trigger/cli-hook');
    const text = await runCli(['workflows', 'list', '--workspace', 'default'], env);
    expect(text.stdout).toContain('v1  https://hooks.example.com/api/webhooks/trigger/cli-hook');
  }, 60_000);
});
