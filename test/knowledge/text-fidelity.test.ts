import { describe, expect, it } from 'vitest';
import { parseDocument } from '../../src/knowledge/parse.js';
import { chunkDocument } from '../../src/knowledge/chunker.js';
import { joinHyphenatedWords, repairPdfText } from '../../src/knowledge/pdf-text.js';
import { rowRecord } from '../../src/knowledge/table-records.js';
import { DEFAULT_CHUNKING } from '../../src/knowledge/wire-format.js';

// Faithful text (issue 28): PDF text keeps identifiers and unbroken words, table rows carry their column
// names, HTML keeps headings and table structure.

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('PDF text repair', () => {
  it('puts back underscores a typesetter drew as rules, where the document spells the identifier elsewhere', () => {
    // As TeX output reads: the bold heading and the parameter labels lost their underscores, the
    // typewriter-font signature kept them.
    const page = [
      'asn1 get length der',
      '[Function]long asn1_get_length_der (const unsigned char * der, int der_len, int * len)',
      'der len: Length of DER data to decode.',
      'Returns the length; see also asn1 get length der for BER.',
    ].join('\n');
    const [out] = repairPdfText([page]);
    expect(out.split('\n')[0]).toBe('asn1_get_length_der');
    expect(out).toContain('der_len: Length of DER data to decode.');
    // Four parts with a digit: safe to restore inside a sentence too.
    expect(out).toContain('see also asn1_get_length_der for BER');
  });

  it('leaves ordinary prose alone: a two-word phrase is restored only as a whole line or a leading label', () => {
    const page = 'The is_valid flag is set.\nWe check it is valid before use.\nis valid: true when checked';
    const [out] = repairPdfText([page]);
    expect(out).toContain('We check it is valid before use.');
    expect(out).toContain('is_valid: true when checked');
  });

  it('joins an identifier broken after an underscore at a line end', () => {
    const [out] = repairPdfText(['more than ASN1_MAX_\nNAME_SIZE characters']);
    expect(out).toBe('more than ASN1_MAX_NAME_SIZE characters');
  });

  it('joins words hyphenated across lines, keeps real compounds and capitalised parts', () => {
    expect(joinHyphenatedWords('structures man-\nagement and more')).toBe('structures management\nand more');
    expect(joinHyphenatedWords('OCTET SE-\nQUENCE.')).toBe('OCTET SEQUENCE.\n');
    expect(joinHyphenatedWords('Dss-\nSig-Value')).toBe('Dss-\nSig-Value');
    // The document writes "read-only" on one line elsewhere: a compound, joined with its hyphen.
    const [out] = repairPdfText(['a read-\nonly file', 'every read-only file']);
    expect(out).toBe('a read-only\nfile');
  });

  it('is applied when a PDF is parsed', async () => {
    const { makePdf } = await import('./files.js');
    const pdf = await makePdf([['The structures man-', 'agement of ASN1_MAX_', 'NAME_SIZE']]);
    const parsed = await parseDocument('pdf', new Uint8Array(pdf));
    const text = parsed.blocks.map((b) => b.text).join('\n');
    expect(text).toContain('management');
    expect(text).toContain('ASN1_MAX_NAME_SIZE');
  });
});

describe('tables as records', () => {
  it('writes each value beside its column name, leaving empty cells out', () => {
    expect(rowRecord(['version', 'codename', 'release', 'eol'], ['12', 'Bookworm', '2023-06-10', ''])).toBe(
      'version: 12; codename: Bookworm; release: 2023-06-10',
    );
    expect(rowRecord(['a', ''], ['1', '2', '3'])).toBe('a: 1; column 2: 2; column 3: 3');
  });

  it('makes CSV row chunks records under the header line, with the row numbers in the metadata', async () => {
    const csv = 'version,codename,series,release\n11,Bullseye,bullseye,2021-08-14\n12,Bookworm,bookworm,2023-06-10\n';
    const parsed = await parseDocument('csv', utf8(csv));
    expect(parsed.blocks[1]).toMatchObject({ kind: 'table-row', text: 'version: 12; codename: Bookworm; series: bookworm; release: 2023-06-10', row: 2 });
    const [chunk] = chunkDocument(parsed, DEFAULT_CHUNKING);
    expect(chunk.content).toBe([
      'version | codename | series | release',
      'version: 11; codename: Bullseye; series: bullseye; release: 2021-08-14',
      'version: 12; codename: Bookworm; series: bookworm; release: 2023-06-10',
    ].join('\n'));
    expect(chunk.metadata.rows).toEqual([1, 2]);
  });
});

describe('HTML structure', () => {
  it('keeps headings as headings and data tables as header plus records', async () => {
    const html = `<h1>Virtual networks</h1><p>Addresses used:</p>
      <table><tr><th>host</th><th>address</th></tr><tr><td>TUN on <b>server</b></td><td>192.168.255.1</td></tr></table>
      <h2>Troubleshooting</h2><p>Load the module.</p>`;
    const parsed = await parseDocument('html', utf8(html));
    expect(parsed.blocks).toEqual([
      { kind: 'heading', text: 'Virtual networks', level: 1 },
      { kind: 'text', text: 'Addresses used:' },
      { kind: 'text', text: 'host | address\nhost: TUN on server; address: 192.168.255.1' },
      { kind: 'heading', text: 'Troubleshooting', level: 2 },
      { kind: 'text', text: 'Load the module.' },
    ]);
  });

  it('walks a layout table (cells holding blocks) as ordinary content', async () => {
    const html = '<table><tr><td><p>First column text.</p></td><td><p>Second column text.</p></td></tr></table>';
    const text = (await parseDocument('html', utf8(html))).blocks.map((b) => b.text).join('\n');
    expect(text).toContain('First column text.');
    expect(text).toContain('Second column text.');
    expect(text).not.toContain(':');
  });
});
