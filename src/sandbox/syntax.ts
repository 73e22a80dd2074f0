// Save-time syntax check of user JavaScript (function blocks): the code is parsed as the body of
// an async function, the way the sandbox runs it (`return` and `await` at the top level). The
// engine receives this checker as `validateDefinition(input, { checkCode })` and stays pure.
import { parse } from 'acorn';

export interface JavaScriptSyntaxError {
  message: string;
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units from the start of the line. */
  column: number;
}

function locationOf(err: unknown): { line: number; column: number } | null {
  if (err === null || typeof err !== 'object' || !('loc' in err)) return null;
  const loc: unknown = err.loc;
  if (loc === null || typeof loc !== 'object' || !('line' in loc) || !('column' in loc)) return null;
  const { line, column } = loc;
  return typeof line === 'number' && typeof column === 'number' ? { line, column } : null;
}

/** The first syntax error of `source` as an async function body; undefined when it parses. */
export function checkJavaScriptSyntax(source: string): JavaScriptSyntaxError | undefined {
  try {
    parse(source, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowReturnOutsideFunction: true,
      allowAwaitOutsideFunction: true,
      locations: true,
    });
    return undefined;
  } catch (err) {
    const loc = locationOf(err);
    if (!(err instanceof SyntaxError) || loc === null) throw err;
    // acorn appends " (line:column)" to its messages; the location is reported separately.
    const message = err.message.replace(/\s*\(\d+:\d+\)$/, '');
    return { message, line: loc.line, column: loc.column + 1 };
  }
}
