// Documents built in the test (never checked in), most of them hostile: archives whose parts inflate far past their size,
// archives that lie about their sizes, a PDF of thousands of pages, a CSV of a million rows.
import { constants, crc32, deflateRawSync } from 'node:zlib';

/**
 * A raw deflate stream of `times` copies of `unit`, made without deflating them all: `unit` is deflated once
 * with a full flush (no final block, dictionary reset), so its compressed bytes are the same wherever it
 * stands and can simply be repeated; an empty final block ends the stream.
 */
export function repeatedDeflate(head: string, unit: Buffer, times: number, tail: string): Buffer {
  const flushed = (b: Buffer) => deflateRawSync(b, { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const unitBytes = flushed(unit);
  return Buffer.concat([flushed(Buffer.from(head)), ...Array.from({ length: times }, () => unitBytes), flushed(Buffer.from(tail)), Buffer.from([0x03, 0x00])]);
}

export interface RawEntry {
  name: string;
  /** Stored bytes (method 0) or a raw deflate stream (method 8). */
  data: Buffer;
  method: 0 | 8;
  /** Inflated size written in the headers (a bomb may lie). */
  declaredSize: number;
  crc?: number;
}

/** A zip archive of the entries as given, sizes and all. */
export function zipOf(entries: RawEntry[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(e.method, 8);
    local.writeUInt32LE(e.crc ?? 0, 14);
    local.writeUInt32LE(e.data.length, 18);
    local.writeUInt32LE(e.declaredSize, 22);
    local.writeUInt16LE(name.length, 26);
    const head = Buffer.alloc(46);
    head.writeUInt32LE(0x02014b50, 0);
    head.writeUInt16LE(20, 4);
    head.writeUInt16LE(20, 6);
    head.writeUInt16LE(e.method, 10);
    head.writeUInt32LE(e.crc ?? 0, 16);
    head.writeUInt32LE(e.data.length, 20);
    head.writeUInt32LE(e.declaredSize, 24);
    head.writeUInt16LE(name.length, 28);
    head.writeUInt32LE(offset, 42);
    locals.push(local, name, e.data);
    central.push(head, name);
    offset += 30 + name.length + e.data.length;
  }
  const dir = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, dir, end]);
}

const stored = (name: string, text: string): RawEntry => {
  const data = Buffer.from(text);
  return { name, data, method: 0, declaredSize: data.length, crc: crc32(data) };
};

const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

/** A DOCX whose word/document.xml is `paragraphs` ordinary paragraphs (about 330 bytes each). */
export function bigParagraphsDocx(paragraphs: number, opts: { declaredSize?: number } = {}): Buffer {
  const paragraph = '<w:p><w:r><w:t>The quarterly report describes how the team reviewed every invoice, reconciled the accounts with the bank statements and filed the results before the deadline set by the finance department for this year.</w:t></w:r></w:p>';
  const perUnit = 100;
  const unit = Buffer.from(paragraph.repeat(perUnit));
  const head = `${XML}<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`;
  const tail = '</w:body></w:document>';
  const times = Math.ceil(paragraphs / perUnit);
  const data = repeatedDeflate(head, unit, times, tail);
  const size = head.length + unit.length * times + tail.length;
  return zipOf([
    stored('[Content_Types].xml', `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`),
    stored('_rels/.rels', `${XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`),
    { name: 'word/document.xml', data, method: 8, declaredSize: opts.declaredSize ?? size },
  ]);
}

/** `bytes` of zeros as a raw deflate stream (a zip bomb's payload). */
export function zerosDeflate(bytes: number): Buffer {
  const unit = 8 * 1024 * 1024;
  if (bytes % unit !== 0) throw new Error('a multiple of 8 MiB');
  return repeatedDeflate('', Buffer.alloc(unit), bytes / unit, '');
}

/** A zip bomb in DOCX, XLSX or PPTX clothing: the main part is `inflated` bytes of zeros, declared as `declaredSize`. */
export function zerosBomb(kind: 'docx' | 'xlsx' | 'pptx', inflated: number, declaredSize = inflated): Buffer {
  const main = { docx: 'word/document.xml', xlsx: 'xl/worksheets/sheet1.xml', pptx: 'ppt/slides/slide1.xml' }[kind];
  return zipOf([
    stored('[Content_Types].xml', `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`),
    stored('_rels/.rels', `${XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>`),
    { name: main, data: zerosDeflate(inflated), method: 8, declaredSize: Math.min(declaredSize, 0xffffffff) },
  ]);
}

/** A valid PDF of `pages` pages, each showing one line of text, written object by object with its xref table. */
export function manyPagePdf(pages: number): Buffer {
  const objects: string[] = [];
  const kids: string[] = [];
  // 1: catalog, 2: page tree, 3: font, 4: shared content stream, then one object per page.
  const content = 'BT /F1 12 Tf 72 720 Td (A page of a very long report.) Tj ET';
  for (let i = 0; i < pages; i++) kids.push(`${5 + i} 0 R`);
  objects.push('<< /Type /Catalog /Pages 2 0 R >>');
  objects.push(`<< /Type /Pages /Count ${pages} /Kids [${kids.join(' ')}] >>`);
  objects.push('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  objects.push(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`);
  for (let i = 0; i < pages; i++) {
    objects.push('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>');
  }
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

/** A CSV of a header and `rows` short rows (about 35 bytes each). */
export function bigCsv(rows: number): Buffer {
  // A block of 1,000 rows repeated: cheap to build, and no parser cares that rows recur.
  const block = Buffer.from(Array.from({ length: 1000 }, (_, i) => `\n${i},customer ${i % 97},city ${i % 11},${(i * 37) % 1000}.25`).join(''));
  const blocks = Math.ceil(rows / 1000);
  return Buffer.concat([Buffer.from('id,name,city,amount'), ...Array.from({ length: blocks }, () => block)]);
}

/**
 * A PPTX of the given slides, each a list of paragraphs (a paragraph's runs joined; `\n` as a line break) and
 * optional speaker notes, its parts deflated as PowerPoint writes them. Only what a text reader needs: no
 * layouts or themes.
 */
export function presentationPptx(slides: { paragraphs: string[]; notes?: string[] }[]): Buffer {
  const escape = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const para = (text: string) => `<a:p>${text.split('\n').map((line) => `<a:r><a:rPr lang="en-US"/><a:t>${escape(line)}</a:t></a:r>`).join('<a:br/>')}</a:p>`;
  const shape = (paragraphs: string[]) =>
    `<p:sp><p:txBody><a:bodyPr/>${paragraphs.map(para).join('')}</p:txBody></p:sp>`;
  const ns = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"';
  const deflated = (name: string, text: string): RawEntry => {
    const raw = Buffer.from(text);
    return { name, data: deflateRawSync(raw), method: 8, declaredSize: raw.length, crc: crc32(raw) };
  };
  return zipOf([
    stored('[Content_Types].xml', `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`),
    stored('_rels/.rels', `${XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/></Relationships>`),
    stored('ppt/presentation.xml', `${XML}<p:presentation ${ns}/>`),
    ...slides.flatMap((slide, i) => [
      deflated(`ppt/slides/slide${i + 1}.xml`, `${XML}<p:sld ${ns}><p:cSld><p:spTree>${shape(slide.paragraphs)}</p:spTree></p:cSld></p:sld>`),
      ...(slide.notes ? [deflated(`ppt/notesSlides/notesSlide${i + 1}.xml`, `${XML}<p:notes ${ns}><p:cSld><p:spTree>${shape([String(i + 1)])}${shape(slide.notes)}</p:spTree></p:cSld></p:notes>`)] : []),
    ]),
  ]);
}
