import { describe, expect, it } from 'vitest';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Document, HeadingLevel, Packer, Paragraph, TextRun } from 'docx';
import writeXlsxFile from 'write-excel-file/node';
import { detectDocumentType, SUPPORTED_EXTENSIONS, unsupportedTypeMessage } from '../../src/knowledge/file-types.js';
import { DocumentParseError, parseDocument, type ParsedBlock } from '../../src/knowledge/parse.js';
import { chunkDocument } from '../../src/knowledge/chunker.js';
import { UNBOUNDED } from '../../src/knowledge/ingest-bounds.js';
import { presentationPptx, zerosBomb } from './hostile-files.js';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const texts = (blocks: ParsedBlock[]): string[] => blocks.map((b) => b.text);

async function pdf(pages: string[][]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = doc.addPage();
    lines.forEach((line, i) => page.drawText(line, { x: 50, y: 700 - i * 20, size: 12, font }));
  }
  return doc.save();
}

async function expectParseError(promise: Promise<unknown>, message: string | RegExp): Promise<void> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(DocumentParseError);
  if (typeof message === 'string') expect((error as Error).message).toBe(message);
  else expect((error as Error).message).toMatch(message);
}

describe('parseDocument', () => {
  it('reads a two-page PDF with page numbers', async () => {
    const bytes = await pdf([['Hello from page one.', 'Second line of it.'], ['Page two says goodbye.']]);
    const parsed = await parseDocument('pdf', bytes);
    expect(parsed.blocks).toEqual([
      { kind: 'text', text: 'Hello from page one.\nSecond line of it.', page: 1 },
      { kind: 'text', text: 'Page two says goodbye.', page: 2 },
    ]);
    expect(parsed.characterCount).toBe('Hello from page one.\nSecond line of it.'.length + 'Page two says goodbye.'.length);
    expect(bytes.byteLength).toBeGreaterThan(0); // the caller's buffer is not handed over to pdf.js
    const chunks = chunkDocument(parsed, { maxSize: 500, minSize: 0, overlap: 0 });
    expect(chunks.map((c) => c.metadata)).toEqual([{ pages: [1, 2] }]);
  });

  it('reads a DOCX, keeping headings', async () => {
    const doc = new Document({
      sections: [{
        children: [
          new Paragraph({ text: 'Getting Started', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({ children: [new TextRun('First paragraph with '), new TextRun({ text: 'bold', bold: true }), new TextRun(' text.')] }),
          new Paragraph({ text: 'Details', heading: HeadingLevel.HEADING_2 }),
          new Paragraph('Second paragraph.'),
        ],
      }],
    });
    const parsed = await parseDocument('docx', await Packer.toBuffer(doc));
    expect(parsed.blocks).toEqual([
      { kind: 'heading', text: 'Getting Started', level: 1 },
      { kind: 'text', text: 'First paragraph with bold text.' },
      { kind: 'heading', text: 'Details', level: 2 },
      { kind: 'text', text: 'Second paragraph.' },
    ]);
  });

  it('reads a PPTX: each slide in order under its heading, line breaks and entities kept, then its notes', async () => {
    const slides: { paragraphs: string[]; notes?: string[] }[] = Array.from({ length: 11 }, (_, i) => ({ paragraphs: [`Point ${i + 1}`] }));
    slides[0] = { paragraphs: ['Quarterly review', 'Revenue & costs\nboth < plan'], notes: ['Mention the new office.'] };
    slides[1] = { paragraphs: [] };
    const parsed = await parseDocument('pptx', presentationPptx(slides));
    expect(parsed.blocks.slice(0, 4)).toEqual([
      { kind: 'heading', text: 'Slide 1', level: 2, page: 1 },
      { kind: 'text', text: 'Quarterly review', page: 1 },
      { kind: 'text', text: 'Revenue & costs\nboth < plan', page: 1 },
      { kind: 'text', text: 'Notes: Mention the new office.', page: 1 },
    ]);
    // Slide 2 says nothing and is left out; slide 10 comes after slide 9, not after slide 1.
    expect(parsed.blocks.filter((b) => b.kind === 'heading').map((b) => b.text)).toEqual(
      ['Slide 1', ...Array.from({ length: 9 }, (_, i) => `Slide ${i + 3}`)],
    );
    expect(detectDocumentType('deck.pptx')).toEqual({ kind: 'pptx', mimeType: 'application/vnd.openxmlformats-officedocument.presentationml.presentation' });
    expect(detectDocumentType('deck.pptx', 'application/octet-stream')?.kind).toBe('pptx');
    expect(detectDocumentType('deck.pptx', 'application/pdf')).toBeUndefined();
  });

  it('reads every sheet of an XLSX, the first row as header', async () => {
    const bytes = await writeXlsxFile([
      {
        sheet: 'People',
        dateFormat: 'yyyy-mm-dd',
        data: [
          ['Name', 'Age', 'Joined'],
          ['Alice', 30, new Date(Date.UTC(2024, 0, 2))],
          [null, null, null],
          ['Bob', null, true],
        ],
      },
      { sheet: 'Empty', data: [[]] },
      { sheet: 'Cities', data: [['City'], ['Paris']] },
    ]).toBuffer();
    const parsed = await parseDocument('xlsx', bytes);
    expect(parsed.blocks).toEqual([
      { kind: 'table-row', text: 'Name: Alice; Age: 30; Joined: 2024-01-02', row: 1, header: 'Name | Age | Joined', sheet: 'People' },
      { kind: 'table-row', text: 'Name: Bob; Joined: true', row: 3, header: 'Name | Age | Joined', sheet: 'People' },
      { kind: 'table-row', text: 'City: Paris', row: 1, header: 'City', sheet: 'Cities' },
    ]);
  });

  it('reads CSV rows under their header, sniffing the delimiter', async () => {
    const parsed = await parseDocument('csv', utf8('\uFEFFname;city;note\n"Smith; J";Paris;"two\nlines"\n\nBob;Rome;\n'));
    expect(parsed.blocks).toEqual([
      { kind: 'table-row', text: 'name: Smith; J; city: Paris; note: two lines', row: 1, header: 'name | city | note' },
      { kind: 'table-row', text: 'name: Bob; city: Rome', row: 2, header: 'name | city | note' },
    ]);
    const commas = await parseDocument('csv', utf8('a,b\n1,2\n3,4'));
    expect(texts(commas.blocks)).toEqual(['a: 1; b: 2', 'a: 3; b: 4']);
    const headerOnly = await parseDocument('csv', utf8('a,b\n'));
    expect(headerOnly.blocks).toEqual([{ kind: 'text', text: 'a | b' }]);
  });

  it('repeats the CSV header in every chunk', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => `item${i},${i * 2},note ${i}`);
    const parsed = await parseDocument('csv', utf8(`id,value,note\n${rows.join('\n')}`));
    const chunks = chunkDocument(parsed, { maxSize: 100, minSize: 0, overlap: 20 });
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) expect(chunk.content.startsWith('id | value | note\n')).toBe(true);
    expect(chunks[0].metadata.rows).toEqual([1, chunks[0].content.split('\n').length - 1]);
    expect((chunks[chunks.length - 1].metadata.rows as number[])[1]).toBe(200);
  });

  it('reads Markdown structure', async () => {
    const md = [
      '---', 'title: Guide', '---', '',
      '# Install **now** &amp; go', '',
      'Some *text* with `code` and [a link](http://example.com).', '',
      '## On Linux', '',
      '- one', '- two', '  - nested', '',
      '1. first', '2. second', '',
      '| A | B |', '|---|---|', '| 1 | 2 |', '',
      '```sh', 'apt install weft', '```', '',
      '> quoted words', '',
    ].join('\n');
    const parsed = await parseDocument('md', utf8(md));
    expect(parsed.blocks).toEqual([
      { kind: 'text', text: 'title: Guide' },
      { kind: 'heading', text: 'Install now & go', level: 1 },
      { kind: 'text', text: 'Some text with code and a link.' },
      { kind: 'heading', text: 'On Linux', level: 2 },
      { kind: 'text', text: '- one\n- two\n  - nested' },
      { kind: 'text', text: '1. first\n2. second' },
      { kind: 'text', text: 'A | B\n1 | 2' },
      { kind: 'code', text: 'apt install weft' },
      { kind: 'text', text: 'quoted words' },
    ]);
  });

  it('reads HTML headings and text, dropping scripts and styles', async () => {
    const html = `<!doctype html><html><head><title>Ignored</title><style>body { color: red }</style>
      <script>var secret = "do not index";</script></head><body>
      <h1>Main  Title</h1><p>Intro with <a href="https://x.test">a link</a>.</p>
      <script>alert("nope")</script><noscript>enable js</noscript>
      <h3>Part
      two</h3><ul><li>apple</li><li>pear</li></ul>
      <table><tr><th>Key</th><th>Value</th></tr><tr><td>k1</td><td>v1</td></tr></table>
      </body></html>`;
    const parsed = await parseDocument('html', utf8(html));
    expect(parsed.blocks).toEqual([
      { kind: 'heading', text: 'Main Title', level: 1 },
      { kind: 'text', text: 'Intro with a link.' },
      { kind: 'heading', text: 'Part two', level: 3 },
      { kind: 'text', text: '- apple\n- pear' },
      { kind: 'text', text: 'Key | Value\nKey: k1; Value: v1' },
    ]);
    const all = texts(parsed.blocks).join(' ');
    for (const hidden of ['secret', 'nope', 'color', 'Ignored', 'enable js']) expect(all).not.toContain(hidden);
  });

  it('flattens JSON into path: value lines, one block per top-level entry', async () => {
    const parsed = await parseDocument('json', utf8(JSON.stringify({
      name: 'weft', tags: ['a', 'b'], nested: { deep: { value: 1, empty: {} }, 'odd key': null }, list: [],
    })));
    expect(texts(parsed.blocks)).toEqual([
      'name: weft',
      'tags[0]: a\ntags[1]: b',
      'nested.deep.value: 1\nnested.deep.empty: {}\nnested["odd key"]: null',
      'list: []',
    ]);
    const array = await parseDocument('json', utf8('[{"id":1},{"id":2}]'));
    expect(texts(array.blocks)).toEqual(['[0].id: 1', '[1].id: 2']);
  });

  it('reads JSONL, one block per line with its line number', async () => {
    const parsed = await parseDocument('jsonl', utf8('{"q":"why?","a":"because"}\n\n{"q":"how?","meta":{"n":2}}\n'));
    expect(parsed.blocks).toEqual([
      { kind: 'table-row', text: 'q: why?\na: because', row: 1 },
      { kind: 'table-row', text: 'q: how?\nmeta.n: 2', row: 3 },
    ]);
  });

  it('reads YAML, keeping indented lines together', async () => {
    const yaml = 'name: weft\nserver:\n  port: 8080\n\n  host: localhost\n\nworkers:\n  - a\n  - b\n';
    const parsed = await parseDocument('yaml', utf8(yaml));
    expect(texts(parsed.blocks)).toEqual(['name: weft\nserver:\n  port: 8080\n\n  host: localhost', 'workers:\n  - a\n  - b']);
  });

  it('reads plain text paragraphs, with a UTF-8 BOM, CRLF, or as UTF-16 with a BOM', async () => {
    const parsed = await parseDocument('txt', utf8('\uFEFFFirst paragraph\nstill first.\r\n\r\n  \r\nSecond one.'));
    expect(texts(parsed.blocks)).toEqual(['First paragraph\nstill first.', 'Second one.']);
    expect(parsed.characterCount).toBe('First paragraph\nstill first.'.length + 'Second one.'.length);
    const utf16 = new Uint8Array([0xff, 0xfe, ...Buffer.from('Héllo wörld', 'utf16le')]);
    expect(texts((await parseDocument('txt', utf16)).blocks)).toEqual(['Héllo wörld']);
    const emoji = await parseDocument('txt', utf8('a 😀'));
    expect(emoji.characterCount).toBe(3);
  });

  describe('errors', () => {
    it('rejects a corrupt PDF', async () => {
      await expectParseError(parseDocument('pdf', utf8('%PDF-1.7 this is not really a pdf')), /^The PDF could not be read: /);
      const truncated = (await pdf([['Some text']])).slice(0, 200);
      await expectParseError(parseDocument('pdf', truncated), /^The PDF could not be read: /);
    });

    it('rejects documents without text', async () => {
      await expectParseError(parseDocument('txt', utf8('  \n\n \t ')), 'The document contains no text');
      await expectParseError(parseDocument('txt', new Uint8Array()), 'The document contains no text');
      await expectParseError(parseDocument('pdf', await pdf([[], []])), 'The document contains no text');
      await expectParseError(parseDocument('html', utf8('<html><script>only()</script></html>')), 'The document contains no text');
    });

    it('rejects text that is not UTF-8', async () => {
      await expectParseError(parseDocument('txt', new Uint8Array([0x68, 0x69, 0xff, 0xfe, 0x80])), 'The file is not UTF-8 text');
      await expectParseError(parseDocument('csv', new Uint8Array([0x61, 0x2c, 0xe9, 0x0a])), 'The file is not UTF-8 text');
      await expectParseError(parseDocument('md', new Uint8Array([0x61, 0x00, 0x62])), 'The file is not UTF-8 text');
    });

    it('rejects invalid JSON and names the bad JSONL line', async () => {
      await expectParseError(parseDocument('json', utf8('{"a": 1,}')), /^The file is not valid JSON: /);
      await expectParseError(parseDocument('jsonl', utf8('{"a":1}\n{"b":\n')), /^Line 2 is not valid JSON: /);
    });

    it('rejects corrupt DOCX and XLSX files', async () => {
      await expectParseError(parseDocument('docx', utf8('not a zip at all')), /^The DOCX file could not be read: /);
      await expectParseError(parseDocument('xlsx', utf8('not a zip at all')), /^The XLSX file could not be read: /);
      await expectParseError(parseDocument('pptx', utf8('not a zip at all')), /^The PPTX file could not be read: /);
      await expectParseError(parseDocument('pptx', presentationPptx([])), 'The PPTX file could not be read: it has no slides');
      // A slide that inflates past the archive bound is refused before it is all inflated.
      const bomb = parseDocument('pptx', zerosBomb('pptx', 64 * 1024 * 1024), { ...UNBOUNDED, maxArchiveBytes: 8 * 1024 * 1024, maxCompressionRatio: 100 });
      await expectParseError(bomb, /WEFT_KNOWLEDGE_MAX_(ARCHIVE_BYTES|COMPRESSION_RATIO)/);
    });

    it('rejects a CSV with an unterminated quote', async () => {
      await expectParseError(parseDocument('csv', utf8('a,b\n"open,2\n')), /^The CSV could not be parsed: /);
    });
  });
});

describe('detectDocumentType', () => {
  it('detects by extension, case-insensitively, with the canonical MIME type', () => {
    expect(detectDocumentType('Report.PDF')).toEqual({ kind: 'pdf', mimeType: 'application/pdf' });
    expect(detectDocumentType('notes.markdown')).toEqual({ kind: 'md', mimeType: 'text/markdown' });
    expect(detectDocumentType('dir/page.htm')).toEqual({ kind: 'html', mimeType: 'text/html' });
    expect(detectDocumentType('data.jsonl')).toEqual({ kind: 'jsonl', mimeType: 'application/x-ndjson' });
    expect(detectDocumentType('conf.yml')).toEqual({ kind: 'yaml', mimeType: 'application/yaml' });
    expect(detectDocumentType('a.docx')?.mimeType).toBe('application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect(detectDocumentType('a.xlsx')?.mimeType).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    for (const extension of SUPPORTED_EXTENSIONS) expect(detectDocumentType(`x.${extension}`)).toBeDefined();
  });

  it('accepts alias and uninformative MIME types', () => {
    expect(detectDocumentType('a.pdf', 'application/x-pdf')?.kind).toBe('pdf');
    expect(detectDocumentType('a.md', 'text/plain; charset=utf-8')?.kind).toBe('md');
    expect(detectDocumentType('a.md', 'text/x-markdown')?.kind).toBe('md');
    expect(detectDocumentType('a.yaml', 'application/x-yaml')?.kind).toBe('yaml');
    expect(detectDocumentType('a.yml', 'text/yaml')?.kind).toBe('yaml');
    expect(detectDocumentType('a.csv', 'application/vnd.ms-excel')?.kind).toBe('csv');
    expect(detectDocumentType('a.json', 'TEXT/PLAIN')?.kind).toBe('json');
    expect(detectDocumentType('a.jsonl', 'application/json')?.kind).toBe('jsonl');
    expect(detectDocumentType('a.docx', 'application/octet-stream')?.kind).toBe('docx');
    expect(detectDocumentType('a.xlsx', '')?.kind).toBe('xlsx');
  });

  it('uses the MIME type when the name has no extension', () => {
    expect(detectDocumentType('README', 'text/markdown')).toEqual({ kind: 'md', mimeType: 'text/markdown' });
    expect(detectDocumentType('upload', 'application/pdf')?.kind).toBe('pdf');
    expect(detectDocumentType('upload', 'text/plain')?.kind).toBe('txt');
    expect(detectDocumentType('upload', 'application/octet-stream')).toBeUndefined();
    expect(detectDocumentType('upload')).toBeUndefined();
  });

  it('rejects a MIME type that contradicts the extension, and unsupported types', () => {
    expect(detectDocumentType('a.pdf', 'image/png')).toBeUndefined();
    expect(detectDocumentType('a.docx', 'text/html')).toBeUndefined();
    expect(detectDocumentType('a.csv', 'application/pdf')).toBeUndefined();
    expect(detectDocumentType('x.exe')).toBeUndefined();
    expect(detectDocumentType('x.exe', 'text/plain')).toBeUndefined();
    expect(detectDocumentType('archive.tar.gz')).toBeUndefined();
    expect(unsupportedTypeMessage('x.exe')).toBe(
      'Unsupported file type "x.exe". Supported types: txt, md, markdown, html, htm, csv, json, jsonl, yaml, yml, pdf, docx, xlsx, pptx.',
    );
  });
});
