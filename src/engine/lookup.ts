// Typed lookups in maps whose keys are known to be present (ids checked by validation).
export function getOrThrow<K, V>(map: ReadonlyMap<K, V>, key: K, what: string): V {
  const value = map.get(key);
  if (value === undefined) throw new Error(`internal: unknown ${what} ${String(key)}`);
  return value;
}
