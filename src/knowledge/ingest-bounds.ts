// What one document may cost to ingest. Uploaded files are untrusted: a small file can expand to gigabytes
// (zip bombs), thousands of pages or millions of rows. Each bound has a name (its environment variable,
// read in src/config.ts) so that a document refused for it says which one and what value applied.
import { DocumentParseError } from './parsed-document.js';

export interface IngestBounds {
  /** Bytes the parts of a DOCX/XLSX/PPTX archive that are read may inflate to, all together. */
  maxArchiveBytes: number;
  /** Inflated bytes per compressed byte of one archive part (parts under 1 MiB inflated are exempt). */
  maxCompressionRatio: number;
  /** Characters of text extracted from one document. */
  maxCharacters: number;
  /** Pages of one PDF. */
  maxPdfPages: number;
  /** Data rows of one CSV, or of all sheets of one XLSX. */
  maxRows: number;
  /** Chunks one document is split into. */
  maxChunks: number;
}

/** No bound at all: for callers that parse trusted input (tests, benchmarks). */
export const UNBOUNDED: IngestBounds = Object.freeze({
  maxArchiveBytes: Number.MAX_SAFE_INTEGER,
  maxCompressionRatio: Number.POSITIVE_INFINITY,
  maxCharacters: Number.POSITIVE_INFINITY,
  maxPdfPages: Number.POSITIVE_INFINITY,
  maxRows: Number.POSITIVE_INFINITY,
  maxChunks: Number.POSITIVE_INFINITY,
});

/** The environment variable that sets each bound: the name a refused document's error carries. */
export const BOUND_VARIABLES = {
  maxArchiveBytes: 'WEFT_KNOWLEDGE_MAX_ARCHIVE_BYTES',
  maxCompressionRatio: 'WEFT_KNOWLEDGE_MAX_COMPRESSION_RATIO',
  maxCharacters: 'WEFT_KNOWLEDGE_MAX_CHARACTERS',
  maxPdfPages: 'WEFT_KNOWLEDGE_MAX_PDF_PAGES',
  maxRows: 'WEFT_KNOWLEDGE_MAX_ROWS',
  maxChunks: 'WEFT_KNOWLEDGE_MAX_CHUNKS',
  ingestTimeoutMs: 'WEFT_KNOWLEDGE_INGEST_TIMEOUT_MS',
  workerHeapMb: 'WEFT_KNOWLEDGE_WORKER_HEAP_MB',
} as const;

export type BoundName = keyof typeof BOUND_VARIABLES;

const UNITS: Record<BoundName, (n: number) => string> = {
  maxArchiveBytes: (n) => `${count(n)} bytes inflated`,
  maxCompressionRatio: (n) => `${count(n)}:1`,
  maxCharacters: (n) => `${count(n)} characters`,
  maxPdfPages: (n) => `${count(n)} pages`,
  maxRows: (n) => `${count(n)} rows`,
  maxChunks: (n) => `${count(n)} chunks`,
  ingestTimeoutMs: (n) => `${count(n / 1000)} s`,
  workerHeapMb: (n) => `${count(n)} MB`,
};

/** A document over one of the bounds; the message names the bound, its value and (when known) what the document has. */
export class DocumentBoundError extends DocumentParseError {
  override name = 'DocumentBoundError';
  constructor(readonly bound: BoundName, limit: number, found?: string) {
    super(`The document exceeds ${BOUND_VARIABLES[bound]} (${UNITS[bound](limit)})${found ? `: ${found}` : ''}`);
  }
}

/** Throws when `value` is over `bounds[bound]`; `describe` says what the document has, for the message. */
export function checkBound(bounds: IngestBounds, bound: keyof IngestBounds, value: number, describe?: (n: number) => string): void {
  if (value > bounds[bound]) throw new DocumentBoundError(bound, bounds[bound], describe?.(value));
}

export const count = (n: number): string => Math.round(n).toLocaleString('en-US');
