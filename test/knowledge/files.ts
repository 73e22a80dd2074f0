// Real document files built in the test with the libraries that write them: a PDF, a DOCX and an xlsx.
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import writeXlsxFile from 'write-excel-file/node';

/** A PDF with one page per entry of `pages`, each page's lines drawn as text. */
export async function makePdf(pages: string[][]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = pdf.addPage([595, 842]);
    lines.forEach((line, i) => page.drawText(line, { x: 50, y: 780 - i * 18, size: 12, font }));
  }
  return Buffer.from(await pdf.save());
}

/** A DOCX with a heading and its paragraphs per section. */
export async function makeDocx(sections: { heading: string; paragraphs: string[] }[]): Promise<Buffer> {
  const children = sections.flatMap((s) => [
    new Paragraph({ text: s.heading, heading: HeadingLevel.HEADING_1 }),
    ...s.paragraphs.map((p) => new Paragraph({ text: p })),
  ]);
  return Packer.toBuffer(new Document({ sections: [{ children }] }));
}

/** An xlsx of one sheet: the header row then the rows. */
export async function makeXlsx(header: string[], rows: (string | number)[][]): Promise<Buffer> {
  const cell = (value: string | number) => ({ value });
  return writeXlsxFile([header.map(cell), ...rows.map((r) => r.map(cell))]).toBuffer();
}
