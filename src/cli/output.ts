/** Prints a command's result: the JSON document alone on stdout with --json, readable lines otherwise. */
export function emit(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(json ? JSON.stringify(value) + '\n' : human() + '\n');
}

export function fail(message: string, json: boolean): never {
  if (json) process.stdout.write(JSON.stringify({ error: message }) + '\n');
  process.stderr.write(`weft: ${message}\n`);
  process.exit(1);
}
