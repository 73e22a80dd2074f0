// Save-time checks: the block cap, references to undeclared start fields, code syntax.
import { describe, expect, it } from 'vitest';
import { compile, validateDefinition, type BlockDefinition, type DefinitionIssue, type ValidateOptions, type WorkflowDefinition } from '../../src/engine/index.js';
import { checkJavaScriptSyntax } from '../../src/sandbox/syntax.js';

function def(blocks: BlockDefinition[], edges: WorkflowDefinition['edges'] = []): WorkflowDefinition {
  return { name: 't', blocks, edges };
}

function start(fields: string[] = []): BlockDefinition {
  return { id: 'start', type: 'start', name: 'Start', config: { inputFormat: fields.map((name) => ({ name, type: 'string' })) } };
}

function fn(id: string, name: string, code: string): BlockDefinition {
  return { id, type: 'function', name, config: { code } };
}

function errorsOf(input: unknown, opts?: ValidateOptions): DefinitionIssue[] {
  const r = validateDefinition(input, opts);
  return r.ok ? [] : r.errors;
}

describe('block cap (maxBlocks)', () => {
  it('refuses 50,000 blocks before any other check, with one issue naming the limit', () => {
    const blocks: BlockDefinition[] = [start()];
    for (let i = 0; i < 49_999; i++) blocks.push(fn(`f${i}`, `F${i}`, 'return 1'));
    // Cheap because it stops at the count: the edges (read by the schema and every later check)
    // are never looked at. Speed itself is measured in bench/, not here.
    let edgesRead = 0;
    const input = { name: 't', blocks, get edges() { edgesRead++; return []; } };
    const errs = errorsOf(input);
    expect(edgesRead).toBe(0);
    expect(errs).toEqual([{ message: 'The definition has 50000 blocks; at most 1000 are allowed (maxBlocks)', field: 'blocks', path: ['blocks'] }]);
  });

  it('counts nested blocks and takes the limit as an option', () => {
    const loop: BlockDefinition = { id: 'each', type: 'loop', name: 'Each', config: { kind: 'for', count: 2 }, blocks: [fn('a', 'A', 'return 1'), fn('b', 'B', 'return 2')] };
    const d = def([start(), loop], [{ from: 'start', to: 'each' }]);
    expect(validateDefinition(d, { maxBlocks: 4 }).ok).toBe(true);
    expect(errorsOf(d, { maxBlocks: 3 })[0].message).toBe('The definition has 4 blocks; at most 3 are allowed (maxBlocks)');
    expect(validateDefinition(d).ok).toBe(true);
  });
});

describe('references to start fields', () => {
  const greet = (code: string) => def([start(['who']), fn('greet', 'Greet', code)], [{ from: 'start', to: 'greet' }]);

  it('reports a field the start block does not declare, naming block and field', () => {
    const errs = errorsOf(greet('return "Hi " + <start.whom>'));
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatchObject({ blockId: 'greet', field: 'config.code', path: ['blocks', 1, 'config', 'code'] });
    expect(errs[0].message).toBe('Block "Greet" (greet): unknown field "whom" of block "Start" (its fields: who, input): <start.whom> in config.code');
  });

  it('accepts declared fields, paths into them, the raw input and the whole output', () => {
    for (const code of ['return <start.who>', 'return <start.who.length>', 'return <start.input>', 'return <start.input.whom>', 'return <start>']) {
      expect(validateDefinition(greet(code)).ok, code).toBe(true);
    }
  });

  it('accepts any field when the start block declares none (the raw input is the output)', () => {
    const d = def([start(), fn('greet', 'Greet', 'return <start.anything>')], [{ from: 'start', to: 'greet' }]);
    expect(validateDefinition(d).ok).toBe(true);
  });

  it('checks every config field, and references through the start block\'s name', () => {
    const d = def(
      [start(['who']), { id: 'set', type: 'variables', name: 'Set', config: { assignments: { a: 'Hi <start.whom>' } } }],
      [{ from: 'start', to: 'set' }],
    );
    expect(errorsOf(d)[0]).toMatchObject({ blockId: 'set', field: 'config.assignments.a' });
  });

  it('a stored definition still compiles (the check is for saving)', () => {
    expect(() => compile(greet('return <start.whom>'))).not.toThrow();
  });
});

describe('references per block and problems reported', () => {
  // Each reference is resolved inside one synchronous step; a block's count is bounded on save
  // (docs/architecture.md, "Where limits are enforced"), and a 400 lists a bounded number of problems.
  const many = (n: number, ref = '<start.who>') => `return [${Array.from({ length: n }, () => ref).join(', ')}]`;
  const withCode = (code: string) => def([start(['who']), fn('many', 'Many', code)], [{ from: 'start', to: 'many' }]);

  it('accepts 1,000 references in a block and refuses 1,001 with one issue naming the block', () => {
    expect(validateDefinition(withCode(many(1000))).ok).toBe(true);
    const errs = errorsOf(withCode(many(1001)));
    expect(errs).toEqual([{
      message: 'Block "Many" (many): the config holds 1001 references; at most 1000 are allowed per block',
      blockId: 'many', field: 'config', path: ['blocks', 1, 'config'],
    }]);
  });

  it('counts references across every config field of the block', () => {
    const d = def(
      [start(['who']), { id: 'set', type: 'variables', name: 'Set', config: { assignments: { a: '<start.who>'.repeat(600), b: '<start.who>'.repeat(401) } } }],
      [{ from: 'start', to: 'set' }],
    );
    expect(errorsOf(d)[0]?.message).toMatch(/holds 1001 references/);
  });

  it('lists at most 100 problems, the last saying how many more there are', () => {
    const errs = errorsOf(withCode(many(300, '<start.whom>')));
    expect(errs).toHaveLength(100);
    expect(errs[98].message).toMatch(/unknown field "whom"/);
    expect(errs[99]).toEqual({ message: 'and 201 more problems', path: [] });
  });

  it('a stored definition over the count still compiles (the check is for saving)', () => {
    expect(() => compile(withCode(many(1001)))).not.toThrow();
  });
});

describe('code syntax (checkCode)', () => {
  const greet = (code: string) => def([start(['who']), fn('greet', 'Greet', code)], [{ from: 'start', to: 'greet' }]);
  const opts = { checkCode: checkJavaScriptSyntax };

  it('reports the line and column of the user\'s code', () => {
    const errs = errorsOf(greet('const a = 1;\nconst b = ;\nreturn a'), opts);
    expect(errs).toEqual([{
      message: 'Block "Greet" (greet): syntax error at line 2, column 11: Unexpected token',
      blockId: 'greet',
      field: 'config.code',
      path: ['blocks', 1, 'config', 'code'],
    }]);
  });

  it('maps positions back across references replaced by injected variables', () => {
    const code = 'const name = <start.who>;\nconst msg = "Hello <start.who>!" + ;\nreturn msg;';
    expect(errorsOf(greet(code), opts)[0].message).toBe('Block "Greet" (greet): syntax error at line 2, column 36: Unexpected token');
    // The error is at a reference itself: reported at its start.
    expect(errorsOf(greet('return <start.who> <start.who>'), opts)[0].message).toBe('Block "Greet" (greet): syntax error at line 1, column 20: Unexpected token');
    // In a template literal, after a reference on the same line.
    expect(errorsOf(greet('const s = `a ${<start.who>} <start.who> b`; let x = ;'), opts)[0].message).toMatch(/line 1, column 53: /);
  });

  it('accepts valid code: top-level await and return, references and secrets as values', () => {
    const code = 'const r = await Promise.resolve(<start.who>);\nconst k = {{API_KEY}};\nreturn `${r} <start.who>` + k;';
    expect(validateDefinition(greet(code), opts).ok).toBe(true);
  });

  it('is skipped without a checker', () => {
    expect(validateDefinition(greet('const b = ;')).ok).toBe(true);
  });

  it('checks function blocks inside containers too', () => {
    const loop: BlockDefinition = { id: 'each', type: 'loop', name: 'Each', config: { kind: 'for', count: 2 }, blocks: [fn('inner', 'Inner', 'return (<loop.index>')] };
    const errs = errorsOf(def([start(), loop], [{ from: 'start', to: 'each' }]), opts);
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatchObject({ blockId: 'inner', path: ['blocks', 1, 'blocks', 0, 'config', 'code'] });
    expect(errs[0].message).toMatch(/^Block "Inner" \(inner\): syntax error at line 1, column \d+: Unexpected token$/);
  });
});
