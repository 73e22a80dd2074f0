// CSV import and export of table rows, done in the browser: the Tables API has no CSV route.
// Parsing uses csv-parse (already the server's CSV parser), loaded only when someone imports a file.
import { selectText, type Column, type ColumnType, type TableRow } from './api';

/**
 * A leading =, +, - or @ (or tab, CR) makes spreadsheets run the cell as a formula, so export prefixes
 * such text with a quote. Text that already starts with quotes before one of those characters is
 * guarded too: import then removes exactly one quote, only where export added it, so `'=x` survives.
 * Plain numbers (-5, +1e3) are left alone.
 */
function needsGuard(text: string): boolean {
  return /^'*[=+\-@\t\r]/.test(text) && !/^[+-]?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(text);
}

/** The export's guard taken off again; text the export did not guard is returned as it is. */
export function unguard(raw: string): string {
  return raw.startsWith("'") && needsGuard(raw.slice(1)) ? raw.slice(1) : raw;
}

/** A cell's text: JSON columns hold JSON (a string value keeps its quotes so it parses back), others their value. */
function cellText(value: unknown, type: ColumnType | undefined): string {
  if (value === null || value === undefined) return '';
  if (type === 'json' || typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** One CSV field: quoted when it holds a comma, quote, CR or LF, or starts/ends with a space (RFC 4180). */
function field(value: unknown, type?: ColumnType): string {
  const text = cellText(value, type);
  const safe = needsGuard(text) ? `'${text}` : text;
  return /[",\r\n]|^\s|\s$/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * Rows as CSV text: a header of the column names, then one line per row (CRLF, as RFC 4180 says). Select cells
 * are written as their options' names (a list joined with ", "), which import reads back.
 */
export function rowsToCsv(columns: Column[], rows: TableRow[]): string {
  const lines = [columns.map((c) => field(c.name)).join(',')];
  const value = (c: Column, v: unknown) => (c.type === 'select' && v !== null && v !== undefined ? selectText(c, v) : v);
  for (const r of rows) lines.push(columns.map((c) => field(value(c, r.data[c.name]), c.type)).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

export interface CsvImport {
  /** Rows ready for the insert API, keyed by column name. */
  rows: Record<string, unknown>[];
  /** CSV headers that match no column: their values are left out. */
  ignoredHeaders: string[];
  /** Problems found while converting, by 1-based CSV line (the header is line 1). */
  errors: string[];
}

/** A cell converted to its column's type; an empty cell is null (the column's "no value"). */
function convert(col: Column, raw: string): { value?: unknown; error?: string } {
  const text = raw.trim();
  if (text === '') return { value: null };
  switch (col.type) {
    case 'number':
    case 'currency': {
      const n = Number(text);
      return Number.isFinite(n) ? { value: n } : { error: `"${text}" is not a number` };
    }
    case 'boolean': {
      const t = text.toLowerCase();
      if (['true', '1', 'yes'].includes(t)) return { value: true };
      if (['false', '0', 'no'].includes(t)) return { value: false };
      return { error: `"${text}" is not true or false` };
    }
    case 'json':
      try {
        return { value: JSON.parse(text) as unknown };
      } catch {
        return { error: `"${text.slice(0, 40)}" is not JSON` };
      }
    case 'select':
      // Option names or ids; the server matches them. Several per cell: separated by commas.
      return { value: col.multiple ? unguard(raw).split(',').map((s) => s.trim()).filter(Boolean) : unguard(raw) };
    default:
      // Undo the export's formula guard, so an exported file imports back unchanged.
      return { value: unguard(raw) };
  }
}

/** Parses CSV text whose first line names the columns, and converts each cell to its column's type. */
export async function csvToRows(text: string, columns: Column[]): Promise<CsvImport> {
  const { parse } = await import('csv-parse/browser/esm/sync');
  const records = parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true }) as string[][];
  const [header, ...body] = records;
  if (!header) return { rows: [], ignoredHeaders: [], errors: ['The file is empty'] };
  const byName = new Map(columns.map((c) => [c.name, c]));
  const ignoredHeaders = header.filter((h) => !byName.has(h.trim()));
  const errors: string[] = [];
  const rows = body.map((record, i) => {
    const row: Record<string, unknown> = {};
    header.forEach((h, j) => {
      const col = byName.get(h.trim());
      if (!col || record[j] === undefined) return;
      const { value, error } = convert(col, record[j] as string);
      if (error) errors.push(`Line ${i + 2}, column ${col.name}: ${error}`);
      else if (value !== null) row[col.name] = value;
    });
    return row;
  });
  return { rows, ignoredHeaders, errors };
}
