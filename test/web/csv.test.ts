// CSV export and import of table rows (web/src/pages/tables/csv.ts): RFC 4180 quoting, the spreadsheet
// formula guard and its exact undoing on import, typed conversion, and JSON columns.
import { describe, expect, it } from 'vitest';
import type { Column, TableRow } from '../../web/src/pages/tables/api';
import { csvToRows, rowsToCsv, unguard } from '../../web/src/pages/tables/csv';

const col = (name: string, type: Column['type']): Column => ({ id: `col_${name}`, name, type, required: false, unique: false });
const row = (data: Record<string, unknown>): TableRow => ({ id: 'r', data, position: 0, createdAt: '', updatedAt: '' });
const lines = (csv: string) => csv.split('\r\n').slice(0, -1);

describe('rowsToCsv', () => {
  it('writes a header and quotes fields with commas, quotes, line breaks or edge spaces', () => {
    const csv = rowsToCsv([col('name', 'string'), col('n', 'number')], [row({ name: 'a, "b"', n: 3 }), row({ name: ' pad', n: null }), row({ name: 'two\nlines' })]);
    expect(csv.endsWith('\r\n')).toBe(true);
    expect(lines(csv)).toEqual(['name,n', '"a, ""b""",3', '" pad",', '"two\nlines",']);
  });

  it('guards text that a spreadsheet would run as a formula, but not plain numbers', () => {
    const values = ['=SUM(A1)', '+1+1', '-2+3', '@cmd', "'=x", '-5', '+1.5e3', 'plain', "'quoted"];
    const csv = rowsToCsv([col('v', 'string')], values.map((v) => row({ v })));
    expect(lines(csv).slice(1)).toEqual(["'=SUM(A1)", "'+1+1", "'-2+3", "'@cmd", "''=x", '-5', '+1.5e3', 'plain', "'quoted"]);
  });

  it('writes JSON columns as JSON, so a string value keeps its quotes', () => {
    const csv = rowsToCsv([col('j', 'json')], [row({ j: 'text' }), row({ j: { a: [1] } }), row({ j: -3 }), row({ j: true })]);
    expect(lines(csv).slice(1)).toEqual(['"""text"""', '"{""a"":[1]}"', '-3', 'true']);
  });
});

describe('unguard', () => {
  it('removes exactly one quote, only where export added one', () => {
    expect(unguard("'=x")).toBe('=x');
    expect(unguard("''=x")).toBe("'=x");
    expect(unguard("'quoted")).toBe("'quoted");
    expect(unguard("'-5")).toBe("'-5");
    expect(unguard('=x')).toBe('=x');
  });
});

describe('csvToRows', () => {
  const columns = [col('name', 'string'), col('n', 'number'), col('ok', 'boolean'), col('j', 'json')];

  it('converts each cell to its column type and reports headers it does not know', async () => {
    const out = await csvToRows('\uFEFFname,n,ok,j,extra\r\nAda,1.5,yes,"{""a"":1}",x\r\nBob,,false,,y\r\n', columns);
    expect(out.ignoredHeaders).toEqual(['extra']);
    expect(out.errors).toEqual([]);
    expect(out.rows).toEqual([{ name: 'Ada', n: 1.5, ok: true, j: { a: 1 } }, { name: 'Bob', ok: false }]);
  });

  it('reports cells that do not fit by line and column', async () => {
    const out = await csvToRows('name,n,ok,j\nA,abc,maybe,{bad\n', columns);
    expect(out.errors).toEqual([
      'Line 2, column n: "abc" is not a number',
      'Line 2, column ok: "maybe" is not true or false',
      'Line 2, column j: "{bad" is not JSON',
    ]);
  });

  it('says so when the file is empty', async () => {
    expect((await csvToRows('', columns)).errors).toEqual(['The file is empty']);
  });

  it('imports an export back unchanged, formula-like text and JSON strings included', async () => {
    const cols = [col('text', 'string'), col('j', 'json')];
    const data = [
      { text: "'=1+1", j: 'just a string' }, { text: '=1+1', j: { nested: ['=x'] } }, { text: "''@x", j: -2 },
      { text: "'plain", j: [1, 'two'] }, { text: '-7', j: 'with, comma' }, { text: 'line\nbreak', j: false },
    ];
    const back = await csvToRows(rowsToCsv(cols, data.map(row)), cols);
    expect(back.errors).toEqual([]);
    expect(back.rows).toEqual(data);
  });
});
