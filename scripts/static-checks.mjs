// `npm test`'s first step: the type check and the lint, side by side (each takes about 30 s and mostly one
// core; one after the other they took a minute). Each one's output is printed whole when it ends, and the
// step fails when either does.
import { spawn } from 'node:child_process';

function run(script) {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (err) => resolve({ script, code: 1, output: `${output}${err.message}\n` }));
    child.on('close', (code, signal) => resolve({ script, code: code ?? 1, signal, output }));
  });
}

const results = await Promise.all(['typecheck', 'lint'].map(run));
for (const r of results) {
  process.stdout.write(r.output);
  process.stdout.write(`${r.script}: ${r.code === 0 ? 'passed' : `failed (${r.signal ?? `exit code ${r.code}`})`}\n`);
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
