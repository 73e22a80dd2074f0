// Large bytea values cross the database boundary as base64 text: decoded and encoded by the database
// (`decode($n, 'base64')` on write, `encode(column, 'base64')` on read), and in this process by Buffer's
// native codec. PGlite converts a bytea parameter or result in JavaScript, a byte at a time: a 30 MB
// document took 15 s to store and 2.7 s to read, holding the one embedded database thread all along,
// against 2.2 s and 0.7 s as base64 (docs/architecture.md, "Embedded database"). A native hex serializer
// and parser handed to PGlite (its `serializers`/`parsers` options) fixed the byte loop too, but measured
// 1.5 to 2 times slower than base64, whose text is a third shorter than hex through the WebAssembly
// boundary. PostgreSQL does either in C; the text form costs it little and keeps one path for both.

/** The bytes as the text a `decode($n, 'base64')` parameter takes. */
export function blobParam(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/**
 * The bytes of an `encode(column, 'base64')` result (PostgreSQL breaks its lines every 76 characters;
 * Buffer's decoder skips them). A plain Uint8Array: pdf.js refuses Buffers.
 */
export function blobFromText(text: string): Uint8Array {
  const b = Buffer.from(text, 'base64');
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}
