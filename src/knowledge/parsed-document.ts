// What parsing produces, apart from the parsers: the chunker and the knowledge service use these without
// loading parse.ts, whose file-format libraries (PDF, DOCX, XLSX, HTML, Markdown, CSV) load on the first upload.

export interface ParsedBlock {
  kind: 'heading' | 'text' | 'code' | 'table-row';
  text: string;
  /** Heading level, 1 to 6 (headings only). */
  level?: number;
  /** 1-based page number (PDF) or slide number (PPTX). */
  page?: number;
  /** Sheet name (XLSX). */
  sheet?: string;
  /** 1-based data row (CSV, XLSX: the first row after the header is 1) or line number (JSONL). */
  row?: number;
  /** The table's header line (CSV, XLSX), repeated at the top of every chunk of rows. */
  header?: string;
}

export interface ParsedDocument {
  blocks: ParsedBlock[];
  /** Unicode characters (code points) of extracted text, over all blocks. */
  characterCount: number;
}

/** A problem with the uploaded file itself; the message is safe to show to the user. */
export class DocumentParseError extends Error {
  override name = 'DocumentParseError';
}

export function codePointLength(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { n--; i++; }
    }
  }
  return n;
}
