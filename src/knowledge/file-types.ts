// Which uploaded files a knowledge base accepts, decided from the file name and the declared MIME type.

export type DocumentKind = 'txt' | 'md' | 'html' | 'csv' | 'json' | 'jsonl' | 'yaml' | 'pdf' | 'docx' | 'xlsx' | 'pptx';

export const SUPPORTED_EXTENSIONS: readonly string[] = Object.freeze([
  'txt', 'md', 'markdown', 'html', 'htm', 'csv', 'json', 'jsonl', 'yaml', 'yml', 'pdf', 'docx', 'xlsx', 'pptx',
]);

const KIND_BY_EXTENSION: Readonly<Record<string, DocumentKind>> = {
  txt: 'txt', md: 'md', markdown: 'md', html: 'html', htm: 'html', csv: 'csv', json: 'json', jsonl: 'jsonl',
  yaml: 'yaml', yml: 'yaml', pdf: 'pdf', docx: 'docx', xlsx: 'xlsx', pptx: 'pptx',
};

const CANONICAL_MIME: Readonly<Record<DocumentKind, string>> = {
  txt: 'text/plain',
  md: 'text/markdown',
  html: 'text/html',
  csv: 'text/csv',
  json: 'application/json',
  jsonl: 'application/x-ndjson',
  yaml: 'application/yaml',
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

// Office files are zip archives and some clients label them so; Windows browsers label .csv as a legacy Excel type.
const ZIP = ['application/zip', 'application/x-zip-compressed', 'application/x-zip'];

// MIME types accepted alongside each extension (besides the canonical one). Clients are inconsistent, so text
// formats also accept text/plain; anything else is a contradiction.
const ALIASES: Readonly<Record<DocumentKind, readonly string[]>> = {
  txt: ['text/plain'],
  md: ['text/markdown', 'text/x-markdown', 'text/x-web-markdown', 'text/plain'],
  html: ['text/html', 'application/xhtml+xml', 'text/plain'],
  csv: ['text/csv', 'text/x-csv', 'application/csv', 'application/x-csv', 'text/comma-separated-values', 'application/vnd.ms-excel', 'text/plain'],
  json: ['application/json', 'text/json', 'application/x-json', 'text/x-json', 'text/plain'],
  jsonl: ['application/x-ndjson', 'application/jsonl', 'application/x-jsonlines', 'application/jsonlines', 'application/json-lines', 'text/jsonl', 'application/json', 'text/plain'],
  yaml: ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml', 'text/plain'],
  pdf: ['application/pdf', 'application/x-pdf', 'application/acrobat', 'applications/vnd.pdf', 'text/pdf', 'text/x-pdf'],
  docx: [CANONICAL_MIME.docx, 'application/msword', ...ZIP],
  xlsx: [CANONICAL_MIME.xlsx, 'application/vnd.ms-excel', ...ZIP],
  pptx: [CANONICAL_MIME.pptx, 'application/vnd.ms-powerpoint', ...ZIP],
};

// Declared types that say nothing about the content.
const UNINFORMATIVE = new Set(['application/octet-stream', 'binary/octet-stream', 'application/unknown', 'application/binary']);

// Used when the file name has no extension: only unambiguous types (text/plain means txt; zip or legacy Excel don't pick one).
const KIND_BY_MIME: Readonly<Record<string, DocumentKind>> = (() => {
  const map: Record<string, DocumentKind> = { 'text/plain': 'txt' };
  const ambiguous = new Set(['text/plain', 'application/json', 'application/vnd.ms-excel', 'application/msword', 'application/vnd.ms-powerpoint', ...ZIP]);
  for (const [kind, aliases] of Object.entries(ALIASES) as [DocumentKind, readonly string[]][]) {
    for (const mime of aliases) if (!ambiguous.has(mime)) map[mime] = kind;
  }
  map['application/json'] = 'json';
  return map;
})();

function normalizeMime(mime: string | undefined): string | undefined {
  const base = mime?.split(';')[0]?.trim().toLowerCase();
  return base && !UNINFORMATIVE.has(base) ? base : undefined;
}

function extensionOf(filename: string): string | undefined {
  const base = filename.split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  // A leading dot alone (".env") is a hidden file's name, not an extension.
  return dot > 0 && dot < base.length - 1 ? base.slice(dot + 1).toLowerCase() : undefined;
}

export function detectDocumentType(filename: string, declaredMime?: string): { kind: DocumentKind; mimeType: string } | undefined {
  const mime = normalizeMime(declaredMime);
  const extension = extensionOf(filename);
  if (extension === undefined) {
    const kind = mime ? KIND_BY_MIME[mime] : undefined;
    return kind ? { kind, mimeType: CANONICAL_MIME[kind] } : undefined;
  }
  const kind = Object.hasOwn(KIND_BY_EXTENSION, extension) ? KIND_BY_EXTENSION[extension] : undefined;
  if (!kind) return undefined;
  // Any text/* type is consistent with a plain-text file.
  if (mime && !ALIASES[kind].includes(mime) && !(kind === 'txt' && mime.startsWith('text/'))) return undefined;
  return { kind, mimeType: CANONICAL_MIME[kind] };
}

export function unsupportedTypeMessage(filename: string): string {
  return `Unsupported file type "${filename}". Supported types: ${SUPPORTED_EXTENSIONS.join(', ')}.`;
}
