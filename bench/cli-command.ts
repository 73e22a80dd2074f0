// `npm run bench -- cli-command [--rounds N] [--events N] [--against <another checkout, built>]`: how long a CLI
// command takes from its spawn to its exit on an embedded data directory no server holds, as a user runs it
// (`node --no-node-snapshot dist/main.js ...`, what bin/weft.mjs runs). Two commands:
//   short  `weft workspaces list --json`: opens the database, reads a row, closes;
//   long   `weft usage reconcile --dry-run --json`: sums every usage event (N seeded before the rounds).
// With `--against`, the other checkout's build runs the same commands on a data directory of its own, one
// command of each build in turn, so that both see the same moments of a shared machine.
// docs/architecture.md, "Start-up".
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { connectDatabase } from '../src/db/connect.js';
import { cleanupAll, installExitHandlers, onCleanup, root } from './compare-procs.js';
import { machine, median } from './support.js';

export const standalone = true;

const COMMANDS = {
  short: ['workspaces', 'list', '--json'],
  long: ['usage', 'reconcile', '--dry-run', '--json'],
} as const;
type CommandName = keyof typeof COMMANDS;

interface Build { name: string; checkout: string; dataDir: string; ms: Record<CommandName, number[]> }

/** A data directory set up by the build's own `weft setup`, then given `events` usage events of one account. */
async function prepare(name: string, checkout: string, events: number): Promise<Build> {
  const main = path.join(checkout, 'dist/main.js');
  if (!fs.existsSync(main)) throw new Error(`${main} is missing: build that checkout first (npm run build)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-cli-command-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const dataDir = path.join(dir, 'data');
  const setup = JSON.parse(execFileSync(process.execPath, ['--no-node-snapshot', main, 'setup', '--json'], {
    cwd: checkout, env: { ...process.env, WEFT_DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
  }).toString()) as { workspaceId: string };
  const db = await connectDatabase({ dataDir });
  try {
    await db.query(
      `INSERT INTO usage_events (account, period, amount_usd, source, idempotency_key)
       SELECT $1, date_trunc('month', now())::date, 0.001, 'bench', 'bench-' || g FROM generate_series(1, $2::int) g`,
      [`workspace:${setup.workspaceId}`, events],
    );
  } finally {
    await db.close();
  }
  return { name, checkout, dataDir, ms: { short: [], long: [] } };
}

/** Wall time of one command, from its spawn to its exit; throws on a failed command. */
function timeCommand(build: Build, command: CommandName): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--no-node-snapshot', path.join(build.checkout, 'dist/main.js'), ...COMMANDS[command]], {
    cwd: build.checkout,
    env: { ...process.env, WEFT_DATA_DIR: build.dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = Math.round(performance.now() - t0);
      if (code === 0) resolve(ms);
      else reject(new Error(`weft ${COMMANDS[command].join(' ')} (${build.name}) exited with ${code}: ${stderr.slice(0, 500)}`));
    });
  });
}

export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args: argv, options: { rounds: { type: 'string', default: '8' }, events: { type: 'string', default: '200000' }, against: { type: 'string' } } });
  const rounds = Number(values.rounds);
  const events = Number(values.events);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds takes a whole number of at least 1');
  if (!Number.isInteger(events) || events < 0) throw new Error('--events takes a whole number');
  installExitHandlers();
  try {
    const builds = [await prepare('this checkout', root, events)];
    if (values.against) builds.push(await prepare(path.resolve(values.against), path.resolve(values.against), events));
    for (let i = 0; i < rounds; i++) {
      for (const build of i % 2 ? [...builds].reverse() : builds) {
        for (const command of Object.keys(COMMANDS) as CommandName[]) build.ms[command].push(await timeCommand(build, command));
      }
      process.stderr.write(`cli-command: ${i + 1}/${rounds}: ${builds.map((b) => `${b.name} short ${b.ms.short[i]} ms, long ${b.ms.long[i]} ms`).join('; ')}\n`);
    }
    return {
      machine: machine(),
      rounds,
      usageEvents: events,
      builds: builds.map((b) => ({
        build: b.name,
        short: { command: COMMANDS.short.join(' '), ms: b.ms.short, medianMs: Math.round(median(b.ms.short)) },
        long: { command: COMMANDS.long.join(' '), ms: b.ms.long, medianMs: Math.round(median(b.ms.long)) },
      })),
    };
  } finally {
    await cleanupAll();
  }
}
