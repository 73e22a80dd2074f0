// MCP tool names of a workspace's workflows: a slug of the workflow's name, made unique in the workspace.
//
// slug: the name NFKD-normalized with diacritics dropped, lower-cased, every run of characters other
//   than a-z and 0-9 turned into one "_", leading and trailing "_" trimmed, cut to 48 characters
//   ("workflow" when nothing is left). "Triage: Tickets (v2)" -> "triage_tickets_v2".
// disambiguation: the workspace's workflows (deployed or not) are taken oldest first (created_at, then
//   id). The first workflow with a slug keeps it; each later one gets "_" + the first 8 hex digits of
//   its id; should that still collide, "_" + all 32 hex digits (slug cut to 31 characters).
// Names therefore fit ^[a-z0-9_]{1,64}$, which every MCP client accepts, and change only when a workflow
// is renamed, or an older workflow with the same slug is created by renaming or goes away.

export const MAX_SLUG = 48;

export function toolSlug(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, MAX_SLUG)
    .replace(/_+$/, '');
  return slug || 'workflow';
}

export interface NamedWorkflow {
  id: string;
  name: string;
  createdAt: Date;
}

/** Tool name of every workflow (by id), unique among them; the result does not depend on the input order. */
export function assignToolNames(workflows: readonly NamedWorkflow[]): Map<string, string> {
  const ordered = [...workflows].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const bySlug = new Map<string, NamedWorkflow[]>();
  for (const w of ordered) {
    const slug = toolSlug(w.name);
    const group = bySlug.get(slug);
    if (group) group.push(w);
    else bySlug.set(slug, [w]);
  }
  const taken = new Set(bySlug.keys());
  const names = new Map<string, string>();
  for (const [slug, group] of bySlug) {
    names.set(group[0].id, slug);
    for (const w of group.slice(1)) {
      const hex = w.id.replace(/-/g, '').toLowerCase();
      let name = `${slug}_${hex.slice(0, 8)}`;
      if (taken.has(name)) name = `${slug.slice(0, 31).replace(/_+$/, '')}_${hex}`;
      taken.add(name);
      names.set(w.id, name);
    }
  }
  return names;
}
