// Function-block code that only computes a value from its inputs is evaluated here, on the host, instead of in a
// V8 context of its own (docs/architecture.md, "Pure code"). Such code is a small subset of JavaScript, checked
// before anything runs: `const` and `let`, `if`, `return`; literals, templates, object and array literals with
// spreads, reading properties of JSON data, operators on primitives, and calls of the built-ins that
// pure-builtins.ts lists. There are no functions, loops, assignments, `this`, `await`, or other globals, so the
// code reaches nothing but its inputs and evaluates each node at most once; a meter bounds what each step costs.
//
// The answer must be the one a fresh context would give. Wherever it could depend on a built-in's state or
// behaviour, evaluation declines and the call goes to the sandbox: an object converted to a primitive, a
// property a prototype would supply, a value past the size caps, a thrown error (the sandbox words it). Both
// realms are the same V8, so what remains (operators on primitives, own data properties, JSON) agrees.
import { MAX_STRING_CHARS, dataSize } from './pure-builtins.js';
import { compile, type Compiled } from './pure-compiler.js';

/** Longer code goes to the sandbox without being parsed here. */
const MAX_CODE_CHARS = 4096;
/** Inputs larger than this (as JSON) go to the sandbox, whose thread parses them off the event loop. */
const MAX_INPUT_CHARS = MAX_STRING_CHARS;
/** The result's size (characters of its strings plus its values) past which it is serialized in the sandbox: as the input's. */
const MAX_RESULT_UNITS = MAX_INPUT_CHARS;
/** Compiled code kept, least recently used dropped first (as the isolates' script caches). */
const CACHE_SIZE = 500;
const cache = new Map<string, Compiled | null>();

/**
 * The value `code` returns for these inputs (as a fresh context would give it after its JSON round trip), or
 * undefined when the call must run in the sandbox. `input` is the JSON of the bindings' values, in `names` order.
 */
export function evaluatePureCode(code: string, names: readonly string[], input: string): { value: unknown } | undefined {
  if (code.length > MAX_CODE_CHARS || input.length > MAX_INPUT_CHARS) return undefined;
  const compiled = compiledFor(code, names);
  if (compiled === null) return undefined;
  try {
    const value = compiled.run(JSON.parse(input) as unknown[]);
    if (dataSize(value, MAX_RESULT_UNITS) > MAX_RESULT_UNITS) return undefined;
    // As the sandbox hands it back: through JSON (NaN to null, undefined properties dropped, ...).
    return { value: JSON.parse(JSON.stringify(value === undefined ? null : value)) as unknown };
  } catch {
    // Declined, or the code throws (or its result nests too deeply to serialize): either way the sandbox
    // answers, and words the error as the user expects.
    return undefined;
  }
}

function compiledFor(code: string, names: readonly string[]): Compiled | null {
  const key = `${names.join(',')}\n${code}`;
  let compiled = cache.get(key);
  if (compiled !== undefined) {
    cache.delete(key);
    cache.set(key, compiled);
    return compiled;
  }
  compiled = compile(code, names);
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(key, compiled);
  return compiled;
}
