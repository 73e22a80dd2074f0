// No import circles under src/ (docs/architecture.md, Areas). The lint's import-x/no-cycle catches value
// cycles as they are written; it skips `import type`, so the whole graph (type imports included) is walked
// here as well.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ESLint } from 'eslint';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const srcDir = path.join(root, 'src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Relative imports of one file (value, type and dynamic), resolved to the .ts files they name. */
function localImports(file: string): string[] {
  const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((ref) => ref.fileName)
    .filter((name) => name.startsWith('.'))
    .flatMap((name) => {
      const target = path.resolve(path.dirname(file), name);
      const candidates = [target.replace(/\.js$/, '.ts'), `${target}.ts`, path.join(target, 'index.ts')];
      const found = candidates.find((candidate) => fs.existsSync(candidate) && fs.statSync(candidate).isFile());
      return found === undefined ? [] : [found];
    });
}

/** Every strongly connected group of more than one file, or a file importing itself: each is a circle. */
function importCircles(files: string[]): string[][] {
  const graph = new Map(files.map((file) => [file, localImports(file)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  // Tarjan's algorithm, iterative so a deep graph cannot overflow the call stack.
  for (const start of files) {
    if (index.has(start)) continue;
    const work: Array<{ file: string; edge: number }> = [{ file: start, edge: 0 }];
    index.set(start, next); low.set(start, next); next += 1; stack.push(start); onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const edges = graph.get(frame.file) ?? [];
      if (frame.edge < edges.length) {
        const target = edges[frame.edge];
        frame.edge += 1;
        if (!index.has(target)) {
          index.set(target, next); low.set(target, next); next += 1; stack.push(target); onStack.add(target);
          work.push({ file: target, edge: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.file, Math.min(low.get(frame.file)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.file, Math.min(low.get(parent.file)!, low.get(frame.file)!));
      if (low.get(frame.file) === index.get(frame.file)) {
        const group: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          group.push(member);
        } while (member !== frame.file);
        if (group.length > 1 || edges.includes(frame.file)) {
          circles.push(group.map((file) => path.relative(root, file)).sort());
        }
      }
    }
  }
  return circles;
}

// Linting parses the import graph it reaches: seconds on a quiet machine, more on a shared one.
describe('import circles', { timeout: 180_000 }, () => {
  const fixtureParent = path.join(srcDir, 'engine');
  const fixtureDir = path.join(fixtureParent, `cycle-fixture-${process.pid}`);
  // The fixture must sit under src/ for the lint's rules to apply. Adding and removing it changes the
  // folder's modification time, which `npm start` and `compare` read as "src/ changed since the last
  // build": give the folder its time back.
  const parentTimes = fs.statSync(fixtureParent);
  afterAll(() => {
    fs.rmSync(fixtureDir, { recursive: true, force: true });
    fs.utimesSync(fixtureParent, parentTimes.atime, parentTimes.mtime);
  });

  it('finds a circle when there is one (the walk is not vacuous)', () => {
    const tmp = fs.mkdtempSync(path.join(root, '.test-cache-cycles-'));
    try {
      fs.writeFileSync(path.join(tmp, 'a.ts'), "import type { B } from './b.js';\nexport type A = { b?: B };\n");
      fs.writeFileSync(path.join(tmp, 'b.ts'), "import type { A } from './a.js';\nexport type B = { a?: A };\n");
      fs.writeFileSync(path.join(tmp, 'c.ts'), "import type { A } from './a.js';\nexport type C = A;\n");
      const circles = importCircles(sourceFiles(tmp));
      expect(circles).toHaveLength(1);
      expect(circles[0].map((file) => path.basename(file))).toEqual(['a.ts', 'b.ts']);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('has none under src/, type imports included', () => {
    expect(importCircles(sourceFiles(srcDir))).toEqual([]);
  });

  it('lint fails on a deliberate value cycle', async () => {
    fs.mkdirSync(fixtureDir, { recursive: true });
    const first = path.join(fixtureDir, 'first.ts');
    const second = path.join(fixtureDir, 'second.ts');
    fs.writeFileSync(first, "import { second } from './second.js';\nexport const first = (): number => second() + 1;\n");
    fs.writeFileSync(second, "import { first } from './first.js';\nexport const second = (): number => first() - 1;\n");
    const eslint = new ESLint({ cwd: root });
    const results = await eslint.lintFiles([first, second]);
    const ruleIds = results.flatMap((result) => result.messages.map((message) => message.ruleId));
    expect(ruleIds.filter((id) => id === 'import-x/no-cycle')).toHaveLength(2);
  });
});
