// What the databases can store as JSON text: PostgreSQL's jsonb (and its text) refuses NUL characters and
// surrogates that are not half of a pair; a write of either fails. Checked where text comes in, so that a
// request holding one is a 400 and not a failed write.

// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** No NUL characters and no unpaired surrogates. */
export function storableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}

/** Whether a parsed value holds a string (or a key) that is not storable text. Walks without recursion. */
export function holdsUnstorableString(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (!storableText(v)) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        if (!storableText(k)) return true;
        stack.push(item);
      }
    }
  }
  return false;
}
