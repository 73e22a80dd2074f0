import { describe, expect, it } from 'vitest';
import { scanTokens, tokenAt } from '../../src/engine/references.js';
import { chain, fn, run, start, workflow } from './helpers.js';

const inputs = [
  { name: 'n', type: 'number' },
  { name: 'name', type: 'string' },
  { name: 'obj', type: 'object' },
  { name: 'list', type: 'array' },
];
const input = { n: 7, name: 'Ada', obj: { a: { b: [10, 20] } }, list: [{ id: 'x' }, { id: 'y' }] };

function assign(assignments: Record<string, unknown>) {
  return workflow([start(inputs), { id: 'set', type: 'variables', name: 'Set', config: { assignments } }], chain('start', 'set'));
}

describe('references in config fields', () => {
  it('a field that is exactly one reference gets the value with its type', async () => {
    const r = await run(assign({ n: '<start.n>', obj: '<start.obj>', deep: '<start.obj.a.b[1]>', id: '<start.list[1].id>', dotIndex: '<start.list.0.id>', missing: '<start.obj.zzz>', whole: '<start>' }), { input });
    expect(r.output).toEqual({ n: 7, obj: { a: { b: [10, 20] } }, deep: 20, id: 'y', dotIndex: 'x', missing: null, whole: expect.objectContaining({ n: 7, name: 'Ada' }) });
  });

  it('references inside longer strings are interpolated (objects as JSON), also in nested values', async () => {
    const r = await run(assign({ s: 'Hi <start.name>, n=<start.n>, obj=<start.obj.a>, none=[<start.obj.zzz>]', nested: { list: ['<start.n>', 'x<start.n>'] } }), { input });
    expect(r.output).toEqual({ s: 'Hi Ada, n=7, obj={"b":[10,20]}, none=[]', nested: { list: [7, 'x7'] } });
  });

  it('leaves comparisons, HTML and unknown names without a path alone', async () => {
    const r = await run(assign({ s: 'a < b, x<3, <b>bold</b>, <nope> <start.n>' }), { input });
    expect(r.output).toEqual({ s: 'a < b, x<3, <b>bold</b>, <nope> 7' });
  });

  it('resolves secrets: whole value, interpolated, unknown left as is; masked in the output and the trace', async () => {
    const d = assign({ key: '{{API_KEY}}', header: 'Bearer {{API_KEY}}', other: '{{UNKNOWN}} and {{ API_KEY }}', lower: '{{api_key}}' });
    d.blocks.push(fn('f', 'return [<set.key>.length, <set.header>.slice(0, 9) === "Bearer s3", <set.other>.length]'));
    d.edges.push({ from: 'set', to: 'f' });
    const r = await run(d, { input, secrets: { API_KEY: 's3cr3t-value' } });
    // Later blocks see the values (lengths of 's3cr3t-value' and of '{{UNKNOWN}} and s3cr3t-value').
    expect(r.output).toEqual([12, true, 28]);
    expect(r.trace[1].output).toEqual({ key: '***', header: 'Bearer ***', other: '{{UNKNOWN}} and ***', lower: '{{api_key}}' });
    expect(JSON.stringify(r.trace[1].input)).not.toContain('s3cr3t-value');
    expect(r.trace[1].input).toEqual({ assignments: { key: '***', header: 'Bearer ***', other: '{{UNKNOWN}} and ***', lower: '{{api_key}}' } });
  });

  it('a reference to a block on an untaken branch is null (empty string when interpolated)', async () => {
    const d = workflow(
      [
        start(),
        { id: 'c', type: 'condition', name: 'C', config: { conditions: [{ id: 'no', expression: 'false' }, { id: 'else' }] } },
        fn('skipped', "return { v: 'x' }"),
        fn('taken', 'return 1'),
        { id: 'set', type: 'variables', name: 'Set', config: { assignments: { whole: '<skipped.v>', text: '[<skipped.v>]' } } },
        fn('code', 'return [<skipped>, <skipped.v>, typeof <skipped.v>]'),
      ],
      [
        { from: 'start', to: 'c' },
        { from: 'c', to: 'skipped', branch: 'no' },
        { from: 'c', to: 'taken', branch: 'else' },
        { from: 'skipped', to: 'set' },
        { from: 'taken', to: 'set' },
        { from: 'set', to: 'code' },
      ],
    );
    const r = await run(d);
    expect(r.trace.find((t) => t.blockId === 'set')?.output).toEqual({ whole: null, text: '[]' });
    expect(r.output).toEqual([null, null, 'object']);
  });

  it('reads variables, with paths', async () => {
    const d = workflow([start(), fn('f', 'return [<variable.cfg.limits[0]>, <variable.name>, <variable.none>]')], chain('start', 'f'), {
      variables: { cfg: { limits: [5, 6] }, name: 'def' },
    });
    expect((await run(d)).output).toEqual([5, 'def', null]);
  });

  it('navigates into JSON text', async () => {
    const d = workflow([start([{ name: 'payload', type: 'string' }]), fn('f', 'return <start.payload.user.id>')], chain('start', 'f'));
    expect((await run(d, { input: { payload: '{"user":{"id":9}}' } })).output).toBe(9);
  });
});

describe('references in code', () => {
  it('are injected as typed variables, never pasted into the code', async () => {
    const evil = "'); throw new Error('pwned'); ('";
    const d = workflow(
      [start(inputs), fn('f', 'return { name: <start.name>, t: typeof <start.n>, isArr: Array.isArray(<start.list>), sum: <start.n> + 1, same: <start.name> === <start.name> }')],
      chain('start', 'f'),
    );
    const r = await run(d, { input: { ...input, name: evil } });
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ name: evil, t: 'number', isArr: true, sum: 8, same: true });
  });

  it('inside string and template literals they read as text', async () => {
    const d = workflow(
      [start(inputs), fn('f', "return ['Hi <start.name>!', \"<start.n>\", `n=<start.n> obj=<start.obj.a> ${1 + <start.n>}`, 'x'.length, \"{{TOKEN}}\".split('').reverse().join(''), 'Bearer {{TOKEN}}'.length, '{{NOPE}}']")],
      chain('start', 'f'),
    );
    const r = await run(d, { input, secrets: { TOKEN: 'tok' } });
    // Reversed: the value reached the code (masking covers its spellings and cases, not a reversal).
    expect(r.output).toEqual(['Hi Ada!', '7', 'n=7 obj={"b":[10,20]} 8', 1, 'kot', 10, '{{NOPE}}']);
  });

  it('keeps comparisons, comments and regex literals intact', async () => {
    const code = [
      'const a = 1, b = 2;',
      '// a comment with <start.name> stays a comment',
      "const re = /<b>|'/g;",
      "const html = '<b>x</b>'.replace(re, '');",
      'return [a < b, a<b, b > a, html, <start.n> > 3];',
    ].join('\n');
    const r = await run(workflow([start(inputs), fn('f', code)], chain('start', 'f')), { input });
    expect(r.output).toEqual([true, true, true, "x</b>", true]);
  });

  it('binds secrets as values in code', async () => {
    const r = await run(workflow([start(), fn('f', 'return {{TOKEN}}.length')], chain('start', 'f')), { secrets: { TOKEN: 'abcd' } });
    expect(r.output).toBe(4);
  });
});

describe('tokenAt', () => {
  const known = (head: string) => head === 'start' || head === 'agent';
  const texts = [
    'return <start.n> + <agent.content>.length', '{{API_KEY}} and {{ lower }}', 'a < b && x<3 || <b><start.x>',
    '<agent> <unknown> <a.b[2].c> {{ TOKEN_1 }}', 'no tokens at all', '<start.list[0]>x<start.list.1.id>',
  ];
  it.each(texts)('finds at each index exactly the token scanTokens finds there: %s', (text) => {
    const found = new Map(scanTokens(text, known).map((t) => [t.index, t.token]));
    for (let i = 0; i < text.length; i++) expect(tokenAt(text, i, known)).toEqual(found.get(i) ?? null);
  });
});
