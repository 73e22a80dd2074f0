// Tool names: the slug of a workflow's name, made unique in the workspace deterministically.
import { describe, expect, it } from 'vitest';
import { assignToolNames, toolSlug } from '../../src/mcp/tool-names.js';

describe('tool names', () => {
  it('slugs a name to lower-case a-z, 0-9 and single underscores', () => {
    expect(toolSlug('Triage: Tickets (v2)')).toBe('triage_tickets_v2');
    expect(toolSlug('  Crème brûlée — Ünïcode ')).toBe('creme_brulee_unicode');
    expect(toolSlug('日本語')).toBe('workflow');
    expect(toolSlug('a'.repeat(80))).toHaveLength(48);
    expect(toolSlug(`${'a'.repeat(47)} b`)).toBe('a'.repeat(47));
  });

  it('keeps the bare slug for the oldest workflow and suffixes later ones with their id, whatever the input order', () => {
    const w = (id: string, name: string, t: number) => ({ id, name, createdAt: new Date(t) });
    const rows = [
      w('bbbbbbbb-0000-4000-8000-000000000002', 'Send Mail', 2),
      w('aaaaaaaa-0000-4000-8000-000000000001', 'send-mail', 1),
      w('cccccccc-0000-4000-8000-000000000003', 'Other', 3),
      // Its own slug is what the second "send mail" would get: the suffix grows to the whole id.
      w('dddddddd-0000-4000-8000-000000000004', 'send mail bbbbbbbb', 0),
    ];
    const names = assignToolNames(rows);
    expect(names.get('aaaaaaaa-0000-4000-8000-000000000001')).toBe('send_mail');
    expect(names.get('bbbbbbbb-0000-4000-8000-000000000002')).toBe('send_mail_bbbbbbbb000040008000000000000002');
    expect(names.get('cccccccc-0000-4000-8000-000000000003')).toBe('other');
    expect(names.get('dddddddd-0000-4000-8000-000000000004')).toBe('send_mail_bbbbbbbb');
    expect(assignToolNames([...rows].reverse())).toEqual(names);
    for (const name of names.values()) expect(name).toMatch(/^[a-z0-9_]{1,64}$/);
  });
});
