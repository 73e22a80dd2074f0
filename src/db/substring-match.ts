/**
 * Case-insensitive substring conditions a tenant chooses (table filters, knowledge tag filters, document
 * search). `ILIKE '%text%'` retries the whole operand at every position of the value, so a crafted operand
 * against a crafted value costs their lengths multiplied, and on the embedded database that statement holds
 * every other one. A regular expression (`~*`) runs the literal as an automaton, close to one pass while
 * the operand stays short (docs/architecture.md, Tables: bounded statements).
 */

export type SubstringKind = 'contains' | 'startsWith' | 'endsWith';

/** Characters of a substring operand: past it PostgreSQL's automaton outgrows its cache of states. */
export const MAX_SUBSTRING_OPERAND = 256;

const escapeRegex = (text: string) => text.replace(/[\\^$.|?*+()[\]{}]/g, (m) => `\\${m}`);

/**
 * The pattern to use with `~` or `~*` for a whole-value match of `pattern`, where `*` stands for any run of
 * characters and everything else is literal (the reference's `$like`: `%` and `_` are plain characters).
 */
export function wildcardRegex(pattern: string): string {
  return `^${pattern.split('*').map(escapeRegex).join('.*')}$`;
}

/** The pattern to use with `~*` for a literal substring match of `text`. */
export function substringRegex(text: string, kind: SubstringKind): string {
  if (kind === 'contains') return `***=${text}`; // `***=`: the rest is a literal
  const escaped = escapeRegex(text);
  return kind === 'startsWith' ? `^${escaped}` : `${escaped}$`;
}
