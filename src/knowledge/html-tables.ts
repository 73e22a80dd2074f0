// HTML data tables as text that keeps their structure: with a header row, each later row becomes a record
// ("host: TUN on server; address: 192.168.255.1"), as CSV and XLSX rows do; without one, cells are joined
// with " | ". Tables used for page layout (a nested table, or cells holding blocks such as paragraphs or
// lists) are walked as ordinary content instead.
import type { DomNode, FormatCallback } from 'html-to-text';
import { rowRecord } from './table-records.js';

const BLOCK_TAGS = new Set(['table', 'p', 'div', 'ul', 'ol', 'dl', 'pre', 'blockquote', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'section', 'article']);
const SKIPPED_TAGS = new Set(['script', 'style', 'template', 'noscript']);

const isTag = (node: DomNode, ...names: string[]): boolean => node.type === 'tag' && names.includes(node.name ?? '');

/** The rows of a table: its own `tr` elements, also those inside thead, tbody and tfoot. */
function rowsOf(table: DomNode): DomNode[] {
  const rows: DomNode[] = [];
  for (const child of table.children) {
    if (isTag(child, 'tr')) rows.push(child);
    else if (isTag(child, 'thead', 'tbody', 'tfoot')) rows.push(...child.children.filter((n) => isTag(n, 'tr')));
  }
  return rows;
}

const cellsOf = (row: DomNode): DomNode[] => row.children.filter((n) => isTag(n, 'td', 'th'));

function holdsBlocks(node: DomNode): boolean {
  // Text nodes have no children array.
  return (node.children ?? []).some((child) => (child.type === 'tag' && BLOCK_TAGS.has(child.name ?? '')) || holdsBlocks(child));
}

function textOf(node: DomNode): string {
  if (node.type === 'text') return node.data ?? '';
  if (node.type !== 'tag' || SKIPPED_TAGS.has(node.name ?? '')) return '';
  if (isTag(node, 'br')) return ' ';
  return (node.children ?? []).map(textOf).join('');
}

const collapse = (text: string): string => text.replace(/\s+/g, ' ').trim();

/** The table's lines, or undefined when it is a layout table to be walked as content. */
export function tableLines(table: DomNode): string[] | undefined {
  const rows = rowsOf(table);
  const cells = rows.map(cellsOf);
  if (rows.length === 0 || cells.some((row) => row.some(holdsBlocks))) return undefined;
  const texts = cells.map((row) => row.map((cell) => collapse(textOf(cell))));
  const first = cells[0] ?? [];
  const inHead = rows[0]?.parent !== undefined && isTag(rows[0].parent, 'thead');
  const hasHeader = texts.length > 1 && first.length > 0 && (inHead || first.every((cell) => isTag(cell, 'th')));
  const lines: string[] = [];
  if (hasHeader) {
    const header = texts[0] as string[];
    lines.push(header.join(' | '));
    for (const row of texts.slice(1)) {
      const record = rowRecord(header, row);
      if (record) lines.push(record);
    }
  } else {
    for (const row of texts) if (row.some((cell) => cell !== '')) lines.push(row.join(' | '));
  }
  return lines;
}

/** html-to-text formatter for `table`: one line per row (the header line, then records), as one block. */
export const tableFormatter: FormatCallback = (elem, walk, builder) => {
  const lines = tableLines(elem);
  builder.openBlock({ leadingLineBreaks: 2 });
  if (lines === undefined) {
    walk(elem.children, builder);
  } else {
    lines.forEach((line, i) => {
      if (i > 0) builder.addLineBreak();
      builder.addLiteral(line);
    });
  }
  builder.closeBlock({ trailingLineBreaks: 2 });
};
