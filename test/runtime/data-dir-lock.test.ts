// The embedded data directory's lock: one process at a time, and a dead holder never blocks a restart.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { lockDataDir } from '../../src/runtime.js';
import { runTempDir } from '../support/temp-dirs.js';

const tempDir = () => runTempDir('lock-');
const configFor = (dir: string) => loadConfig({ WEFT_DATA_DIR: dir });

/**
 * A child that leaves a zombie behind: `sh` starts a short `sleep` in the background, prints its pid, then
 * becomes a long `sleep`, which never reaps the short one when it ends.
 */
async function withZombie(fn: (pid: number) => void): Promise<void> {
  const child = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 10'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const pid = await new Promise<number>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    // Wait until the kernel shows it as a zombie.
    const zombie = () => fs.existsSync(`/proc/${pid}/stat`) && fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
    for (let i = 0; i < 150 && !zombie(); i++) await new Promise((r) => setTimeout(r, 20));
    expect(zombie()).toBe(true);
    fn(pid);
  } finally {
    child.kill('SIGKILL');
  }
}

describe('data directory lock', () => {
  it('refuses a second holder while the first is alive, and frees on release', () => {
    const dir = tempDir();
    const release = lockDataDir(configFor(dir));
    // A live process that is not us (our parent, the test runner) holding the lock.
    fs.writeFileSync(path.join(dir, 'weft.lock'), fs.readFileSync(path.join(dir, 'weft.lock'), 'utf8').replace(String(process.pid), String(process.ppid)).split(':')[0]!);
    expect(() => lockDataDir(configFor(dir))).toThrow(/in use by process/);
    fs.unlinkSync(path.join(dir, 'weft.lock'));
    release();
    const again = lockDataDir(configFor(dir));
    again();
    expect(fs.existsSync(path.join(dir, 'weft.lock'))).toBe(false);
  });

  it.skipIf(!fs.existsSync('/proc/self/stat'))('takes over a lock whose holder is a zombie', async () => {
    const dir = tempDir();
    await withZombie((pid) => {
      fs.writeFileSync(path.join(dir, 'weft.lock'), String(pid));
      const release = lockDataDir(configFor(dir));
      expect(fs.readFileSync(path.join(dir, 'weft.lock'), 'utf8')).toMatch(new RegExp(`^${process.pid}:`));
      release();
    });
  });

  it.skipIf(!fs.existsSync('/proc/self/stat'))('takes over a lock whose pid now belongs to another process', () => {
    const dir = tempDir();
    // The parent's pid with a start time that is not its own: the recorded process is gone, the pid reused.
    fs.writeFileSync(path.join(dir, 'weft.lock'), `${process.ppid}:1`);
    const release = lockDataDir(configFor(dir));
    // The lock now names this process (pid and its own start time), not the stale record.
    const held = fs.readFileSync(path.join(dir, 'weft.lock'), 'utf8');
    expect(held).toMatch(new RegExp(`^${process.pid}:\\d+$`));
    expect(held).not.toBe(`${process.ppid}:1`);
    release();
    expect(fs.existsSync(path.join(dir, 'weft.lock'))).toBe(false);
  });
});

describe('the data directory', () => {
  // It holds password and key hashes, every tenant's data and the secrets' key file (an audit read the
  // database as another local user from a directory the umask had left open).
  it('is the server\'s account\'s only: made 0700, and an existing open one narrowed', () => {
    const made = path.join(tempDir(), 'fresh');
    lockDataDir(configFor(made))();
    expect(fs.statSync(made).mode & 0o777).toBe(0o700);
    const open = tempDir();
    fs.chmodSync(open, 0o755);
    lockDataDir(configFor(open))();
    expect(fs.statSync(open).mode & 0o777).toBe(0o700);
  });
});
