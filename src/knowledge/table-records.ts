// Table rows as records: each value is written beside its column's name, so that the text index and the
// embedding both see what a value means ("release: 2023-06-10", not a bare date in a column of dates).

/** The name of each column: its header cell, or "column N" (1-based) where the header cell is empty or missing. */
export function columnNames(header: readonly string[], width: number): string[] {
  const names: string[] = [];
  for (let i = 0; i < Math.max(header.length, width); i++) {
    const name = (header[i] ?? '').replace(/\s+/g, ' ').trim();
    names.push(name === '' ? `column ${i + 1}` : name);
  }
  return names;
}

/**
 * One row as "name: value; name: value", in column order. Empty cells are left out: a record lists what
 * the row holds, and "eol-lts: " with nothing after it would only add noise to both indexes.
 */
export function rowRecord(header: readonly string[], row: readonly string[]): string {
  const names = columnNames(header, row.length);
  const parts: string[] = [];
  row.forEach((cell, i) => {
    const value = cell.replace(/\s+/g, ' ').trim();
    if (value !== '') parts.push(`${names[i]}: ${value}`);
  });
  return parts.join('; ');
}
