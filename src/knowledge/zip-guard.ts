// Reads a DOCX/XLSX (zip) archive within the inflate bounds, then hands the parser a rebuilt archive.
//
// The parsers' own unzip code (mammoth through jszip, read-excel-file through a streaming unzipper) inflates
// whatever an entry holds: a 2 MB file can declare, or simply contain, gigabytes. So the archive is read here
// first: the central directory's declared sizes are checked before anything is inflated, and every read part
// is inflated with a hard cap on its output (declared sizes lie). The parser then gets a new archive whose
// parts are stored uncompressed, byte for byte what was counted here, so it never inflates anything itself.
// Parts the parsers do not read (images, embedded objects) are kept as empty entries and never inflated.
import { crc32, inflateRawSync } from 'node:zlib';
import { checkBound, count, DocumentBoundError, type IngestBounds } from './ingest-bounds.js';
import { DocumentParseError } from './parsed-document.js';

/** Parts smaller than this (inflated) are not held to the compression ratio: tiny repetitive XML compresses well. */
const RATIO_EXEMPT_BYTES = 1024 * 1024;
const MAX_ENTRIES = 65_535;

interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  compressedSize: number;
  declaredSize: number;
  localHeaderOffset: number;
}

export interface GuardedArchive {
  /** The inflated parts that were read (XML and relationship parts), by name. */
  parts: Map<string, Buffer>;
  /** The archive to hand the parser: every part stored uncompressed, unread parts empty. */
  repacked: Buffer;
}

/** Office parsers read only XML parts (`.xml`, `.rels`); everything else is media. */
export const isXmlPart = (name: string): boolean => /\.(xml|rels)$/i.test(name);

export function guardArchive(bytes: Uint8Array, label: string, bounds: IngestBounds): GuardedArchive {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const invalid = (why: string) => new DocumentParseError(`The ${label} file could not be read: ${why}`);
  const entries = readCentralDirectory(buf, invalid);
  const read = entries.filter((e) => isXmlPart(e.name));

  // Before inflating anything: what the directory declares.
  const declared = read.reduce((n, e) => n + e.declaredSize, 0);
  checkBound(bounds, 'maxArchiveBytes', declared, (n) => `its parts declare ${count(n)} bytes`);
  for (const e of read) checkRatio(bounds, e, e.declaredSize, 'declares');

  // While inflating: each part may produce at most what is left of the budget, and at most its ratio allows.
  const parts = new Map<string, Buffer>();
  let inflated = 0;
  for (const e of read) {
    const data = entryData(buf, e, invalid);
    const budget = bounds.maxArchiveBytes - inflated;
    const ratioCap = Math.max(RATIO_EXEMPT_BYTES, e.compressedSize * bounds.maxCompressionRatio);
    let content: Buffer;
    if (e.method === 0) {
      content = Buffer.from(data);
    } else {
      const cap = Math.min(budget, ratioCap, 2 ** 31 - 1);
      try {
        content = inflateRawSync(data, { maxOutputLength: Math.max(1, cap) });
      } catch (error) {
        if ((error as { code?: string }).code !== 'ERR_BUFFER_TOO_LARGE') throw invalid(`part ${e.name} is corrupt`);
        if (cap === budget) throw new DocumentBoundError('maxArchiveBytes', bounds.maxArchiveBytes, `${e.name} inflates past it`);
        throw new DocumentBoundError('maxCompressionRatio', bounds.maxCompressionRatio, `${e.name} inflates past it`);
      }
    }
    inflated += content.length;
    checkBound(bounds, 'maxArchiveBytes', inflated, (n) => `its parts inflate to ${count(n)} bytes`);
    checkRatio(bounds, e, content.length, 'inflates to');
    parts.set(e.name, content);
  }
  return { parts, repacked: storedArchive(entries.map((e) => [e.name, parts.get(e.name) ?? Buffer.alloc(0)])) };
}

function checkRatio(bounds: IngestBounds, e: ZipEntry, size: number, verb: string): void {
  if (size <= RATIO_EXEMPT_BYTES) return;
  const ratio = size / Math.max(1, e.compressedSize);
  checkBound(bounds, 'maxCompressionRatio', ratio, () => `${e.name} ${verb} ${count(size)} bytes from ${count(e.compressedSize)}`);
}

function readCentralDirectory(buf: Buffer, invalid: (why: string) => DocumentParseError): ZipEntry[] {
  // The end-of-central-directory record sits in the last 22 bytes plus a comment of at most 65,535.
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 65_535); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
  }
  if (eocd < 0) throw invalid('it is not a zip archive');
  let total = buf.readUInt16LE(eocd + 10);
  let offset = buf.readUInt32LE(eocd + 16);
  if (total === 0xffff || offset === 0xffffffff) {
    // Zip64: the locator just before the record points at the 64-bit record.
    const locator = eocd - 20;
    if (locator < 0 || buf.readUInt32LE(locator) !== 0x07064b50) throw invalid('its zip64 directory is missing');
    const record = safeNumber(buf.readBigUInt64LE(locator + 8));
    if (record + 56 > buf.length || buf.readUInt32LE(record) !== 0x06064b50) throw invalid('its zip64 directory is corrupt');
    total = safeNumber(buf.readBigUInt64LE(record + 32));
    offset = safeNumber(buf.readBigUInt64LE(record + 48));
  }
  if (total > MAX_ENTRIES) throw invalid(`it has more than ${count(MAX_ENTRIES)} entries`);
  const entries: ZipEntry[] = [];
  const names = new Set<string>();
  let p = offset;
  for (let n = 0; n < total; n++) {
    if (p + 46 > buf.length || buf.readUInt32LE(p) !== 0x02014b50) throw invalid('its central directory is corrupt');
    const flags = buf.readUInt16LE(p + 8);
    const nameLength = buf.readUInt16LE(p + 28);
    const extraLength = buf.readUInt16LE(p + 30);
    const commentLength = buf.readUInt16LE(p + 32);
    if (p + 46 + nameLength + extraLength > buf.length) throw invalid('its central directory is corrupt');
    const name = buf.toString(flags & 0x800 ? 'utf8' : 'latin1', p + 46, p + 46 + nameLength);
    const entry: ZipEntry = {
      name, flags, method: buf.readUInt16LE(p + 10),
      compressedSize: buf.readUInt32LE(p + 20), declaredSize: buf.readUInt32LE(p + 24), localHeaderOffset: buf.readUInt32LE(p + 42),
    };
    applyZip64Extra(entry, buf.subarray(p + 46 + nameLength, p + 46 + nameLength + extraLength));
    if (flags & 0x1) throw invalid(`part ${name} is encrypted`);
    if (entry.method !== 0 && entry.method !== 8) throw invalid(`part ${name} uses an unsupported compression method (${entry.method})`);
    // Two parts of one name would let the parser read a different one from the one checked here.
    if (names.has(name)) throw invalid(`part ${name} occurs twice`);
    names.add(name);
    entries.push(entry);
    p += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** Sizes and offsets over 4 GiB live in the zip64 extra field, present only for the fields that overflowed. */
function applyZip64Extra(e: ZipEntry, extra: Buffer): void {
  for (let i = 0; i + 4 <= extra.length;) {
    const id = extra.readUInt16LE(i);
    const size = extra.readUInt16LE(i + 2);
    if (id === 0x0001) {
      let q = i + 4;
      const next = (): number => {
        if (q + 8 > i + 4 + size || q + 8 > extra.length) return 0xffffffff;
        const v = safeNumber(extra.readBigUInt64LE(q));
        q += 8;
        return v;
      };
      if (e.declaredSize === 0xffffffff) e.declaredSize = next();
      if (e.compressedSize === 0xffffffff) e.compressedSize = next();
      if (e.localHeaderOffset === 0xffffffff) e.localHeaderOffset = next();
      return;
    }
    i += 4 + size;
  }
}

function entryData(buf: Buffer, e: ZipEntry, invalid: (why: string) => DocumentParseError): Buffer {
  const p = e.localHeaderOffset;
  if (p + 30 > buf.length || buf.readUInt32LE(p) !== 0x04034b50) throw invalid(`part ${e.name} is corrupt`);
  const start = p + 30 + buf.readUInt16LE(p + 26) + buf.readUInt16LE(p + 28);
  if (start + e.compressedSize > buf.length) throw invalid(`part ${e.name} is truncated`);
  return buf.subarray(start, start + e.compressedSize);
}

function safeNumber(v: bigint): number {
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
}

/** A zip archive of the given parts, each stored (method 0) with its CRC, names flagged UTF-8. */
function storedArchive(parts: [string, Buffer][]): Buffer {
  const chunks: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of parts) {
    const nameBytes = Buffer.from(name, 'utf8');
    const crc = crc32(content);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x800, 6);
    local.writeUInt16LE(0, 8);
    local.writeUInt32LE(0x00210000, 10); // time 00:00, date 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(content.length, 18);
    local.writeUInt32LE(content.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(20, 4);
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(0x800, 8);
    header.writeUInt16LE(0, 10);
    header.writeUInt32LE(0x00210000, 12);
    header.writeUInt32LE(crc, 16);
    header.writeUInt32LE(content.length, 20);
    header.writeUInt32LE(content.length, 24);
    header.writeUInt16LE(nameBytes.length, 28);
    header.writeUInt32LE(offset, 42);
    central.push(header, nameBytes);
    chunks.push(local, nameBytes, content);
    offset += 30 + nameBytes.length + content.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(parts.length, 8);
  end.writeUInt16LE(parts.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...chunks, directory, end]);
}
