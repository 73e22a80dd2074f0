import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compile, DefinitionError, validateDefinition, workflowDefinitionSchema, type DefinitionIssue, type WorkflowDefinition } from '../../src/engine/index.js';

const example: WorkflowDefinition = {
  name: 'Triage',
  variables: { threshold: 0.8 },
  blocks: [
    { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'ticket', type: 'string', required: true }, { name: 'items', type: 'array' }] } },
    { id: 'score', type: 'function', name: 'Score', config: { code: "return { urgent: <start.ticket>.includes('down') }" } },
    { id: 'route', type: 'condition', name: 'Route', config: { conditions: [{ id: 'urgent', expression: '<score.urgent> === true' }, { id: 'else' }] } },
    { id: 'page', type: 'function', name: 'Page', config: { code: 'return 1' } },
    { id: 'fallback', type: 'function', name: 'Fallback', config: { code: 'return <score.error>' } },
    {
      id: 'each', type: 'loop', name: 'Each', config: { kind: 'forEach', items: '<start.items>' },
      blocks: [{ id: 'fetch', type: 'http', name: 'Fetch', config: { url: '<loop.currentItem>' } }],
    },
  ],
  edges: [
    { from: 'start', to: 'score' },
    { from: 'score', to: 'route' },
    { from: 'route', to: 'page', branch: 'urgent' },
    { from: 'score', to: 'fallback', on: 'error' },
    { from: 'start', to: 'each' },
  ],
};

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

function errorsOf(input: unknown): DefinitionIssue[] {
  const r = validateDefinition(input);
  if (r.ok) throw new Error('expected validation errors');
  return r.errors;
}

describe('validateDefinition', () => {
  it('accepts the documented example and returns the definition', () => {
    const r = validateDefinition(example);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.definition.blocks).toHaveLength(6);
    expect(() => compile(example)).not.toThrow();
  });

  it('publishes a zod schema that converts to JSON Schema (recursive blocks)', () => {
    const js = z.toJSONSchema(workflowDefinitionSchema, { io: 'input' }) as Record<string, unknown>;
    expect(JSON.stringify(js)).toContain('blocks');
  });

  it('reports schema errors with the path and the block', () => {
    const def = clone(example);
    (def.blocks[1].config as Record<string, unknown>).timeoutMs = 999_999;
    const errs = errorsOf(def);
    expect(errs).toHaveLength(1);
    expect(errs[0].blockId).toBe('score');
    expect(errs[0].field).toBe('config.timeoutMs');
    expect(errs[0].path).toEqual(['blocks', 1, 'config', 'timeoutMs']);
    expect(errs[0].message).toMatch(/^Block "Score" \(score\): config\.timeoutMs: /);
  });

  it('reports structural errors (missing id) with the path', () => {
    const def = clone(example) as { blocks: Record<string, unknown>[] };
    delete def.blocks[3].id;
    const errs = errorsOf(def);
    expect(errs[0].path).toEqual(['blocks', 3, 'id']);
    expect(errs[0].message).toContain('Block "Page"');
    expect(errorsOf({ blocks: 'nope' })[0].path).toEqual(['blocks']);
  });

  it('rejects unknown block types and unknown config keys', () => {
    const def = clone(example);
    def.blocks[3].type = 'teleport';
    def.blocks[1].config = { code: 'return 1', cod: 'x' } as never;
    const errs = errorsOf(def);
    expect(errs.find((e) => e.field === 'type')?.message).toBe('Block "Page" (page): unknown block type "teleport"');
    expect(errs.find((e) => e.blockId === 'score')?.message).toMatch(/cod/);
  });

  it('rejects duplicate ids, including nested ones', () => {
    const def = clone(example);
    def.blocks[5].blocks![0].id = 'page';
    const errs = errorsOf(def);
    expect(errs.some((e) => e.message.includes('duplicate block id "page"') && e.field === 'id')).toBe(true);
  });

  it('rejects names that collide after normalization and reserved names', () => {
    const def = clone(example);
    def.blocks[3].name = 'sc.ore';
    def.blocks[4].name = 'Loop';
    const errs = errorsOf(def);
    expect(errs.find((e) => e.blockId === 'page')?.message).toMatch(/duplicates the name of block "score"/);
    expect(errs.find((e) => e.blockId === 'fallback')?.message).toMatch(/name "Loop" is reserved/);
    const def2 = clone(example);
    def2.blocks[3].name = 'Start';
    expect(errorsOf(def2).some((e) => e.blockId === 'page' && /reserved/.test(e.message))).toBe(true);
  });

  it('rejects edges to or from a missing block', () => {
    const def = clone(example);
    def.edges.push({ from: 'ghost', to: 'page' }, { from: 'page', to: 'nowhere' });
    const errs = errorsOf(def);
    expect(errs.some((e) => e.message.includes('unknown source block "ghost"') && e.field === 'from')).toBe(true);
    expect(errs.some((e) => e.message.includes('unknown target block "nowhere"') && e.field === 'to')).toBe(true);
  });

  it('rejects edges crossing container boundaries', () => {
    const def = clone(example);
    def.edges.push({ from: 'page', to: 'fetch' });
    const errs = errorsOf(def);
    expect(errs[0].message).toMatch(/Block "Page" \(page\): edge to block "Fetch" \(fetch\) crosses a container boundary/);
  });

  it('rejects a branch the source block does not have', () => {
    const def = clone(example);
    def.edges.push({ from: 'route', to: 'fallback', branch: 'maybe' });
    def.edges.push({ from: 'page', to: 'fallback', branch: 'x' });
    const errs = errorsOf(def);
    expect(errs[0].message).toBe('Block "Route" (route): has no branch "maybe" (branches: urgent, else)');
    expect(errs[0].field).toBe('branch');
    expect(errs[1].message).toBe('Block "Page" (page): has no branch "x"');
  });

  it('rejects cycles', () => {
    const def = clone(example);
    def.edges.push({ from: 'page', to: 'score' });
    const errs = errorsOf(def);
    expect(errs[0].message).toMatch(/cycle through blocks "Score", "Route", "Page"/);
    const def2 = clone(example);
    def2.edges.push({ from: 'page', to: 'page' });
    expect(errorsOf(def2)[0].message).toMatch(/cycle/);
  });

  it('rejects unknown references, naming the block and field', () => {
    const def = clone(example);
    def.blocks[1].config = { code: 'return <nope.x>' };
    const errs = errorsOf(def);
    expect(errs).toEqual([
      { message: 'Block "Score" (score): unknown reference <nope.x> in config.code', blockId: 'score', field: 'config.code', path: ['blocks', 1, 'config', 'code'] },
    ]);
  });

  it('rejects <loop.*> outside a loop and <parallel.*> outside a parallel', () => {
    const def = clone(example);
    def.blocks[3].config = { code: 'return <loop.index>' };
    def.blocks[5].blocks![0].config = { url: '<parallel.currentItem>' };
    const errs = errorsOf(def);
    expect(errs.map((e) => e.message)).toEqual([
      'Block "Page" (page): <loop.*> used outside a loop: <loop.index> in config.code',
      'Block "Fetch" (fetch): <parallel.*> used outside a parallel: <parallel.currentItem> in config.url',
    ]);
  });

  it('accepts <loop.index> in a while condition and children references there', () => {
    const def = {
      blocks: [
        { id: 'start', type: 'start', name: 'Start', config: {} },
        { id: 'w', type: 'loop', name: 'W', config: { kind: 'while', condition: '<loop.index> < 3 && <inc> !== 2' }, blocks: [{ id: 'inc', type: 'function', name: 'Inc', config: { code: 'return <loop.index>' } }] },
      ],
      edges: [{ from: 'start', to: 'w' }],
    };
    expect(validateDefinition(def).ok).toBe(true);
  });

  it('rejects references into a container from outside it', () => {
    const def = clone(example);
    def.blocks[3].config = { code: 'return <fetch.data>' };
    const errs = errorsOf(def);
    expect(errs[0].message).toMatch(/Block "Page" \(page\): reference to a block inside "Each" is not visible here \(use <each.results> after it\): <fetch.data> in config.code/);
    def.blocks[3].config = { code: 'return <each.results>' };
    expect(validateDefinition(def).ok).toBe(true);
  });

  it('needs exactly one start block at the top level', () => {
    const none = clone(example);
    none.blocks = none.blocks.filter((b) => b.id !== 'start');
    none.edges = none.edges.filter((e) => e.from !== 'start');
    none.blocks[0].config = { code: 'return 1' };
    expect(errorsOf(none).some((e) => /exactly one start block/.test(e.message))).toBe(true);

    const two = clone(example);
    two.blocks.push({ id: 'start2', type: 'start', name: 'Start 2', config: {} });
    expect(errorsOf(two).some((e) => e.blockId === 'start2' && /exactly one start block; found 2/.test(e.message))).toBe(true);

    const nested = clone(example);
    nested.blocks[5].blocks!.push({ id: 's3', type: 'start', name: 'Inner', config: {} });
    expect(errorsOf(nested).some((e) => e.blockId === 's3' && /top level/.test(e.message))).toBe(true);
  });

  it('allows children only on containers', () => {
    const def = clone(example) as typeof example & { blocks: { blocks?: unknown[] }[] };
    def.blocks[3].blocks = [{ id: 'kid', type: 'function', name: 'Kid', config: { code: 'return 1' } }];
    const errs = errorsOf(def);
    expect(errs[0]).toMatchObject({ blockId: 'page', field: 'blocks', message: 'Block "Page" (page): only loop and parallel blocks can contain blocks' });
  });

  it('does not treat comparisons or HTML as references', () => {
    const def = clone(example);
    def.blocks[3].config = { code: "const a = 1, b = 2, x = 2; if (a < b && x<3 && b > a) return '<b>bold</b><br/>' + '<div class=\"x\">'; return 0" };
    expect(validateDefinition(def).ok).toBe(true);
  });

  it('compile throws DefinitionError carrying the issues', () => {
    const def = clone(example);
    def.blocks[1].config = { code: 'return <nope.x>' };
    try {
      compile(def);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(DefinitionError);
      expect((err as DefinitionError).issues[0].blockId).toBe('score');
      expect((err as DefinitionError).message).toContain('unknown reference <nope.x>');
    }
  });
});
