// Reads a decoded proto by path (`filter_chains[0].filters[0].typed_config.cluster`): tests assert
// on a few deep fields without typing every Envoy message.
export function at(value: unknown, path: string): unknown {
  let current = value;
  for (const part of path.match(/[^.[\]]+/g) ?? []) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** `at` for an array (empty when absent). */
export function list(value: unknown, path = ''): unknown[] {
  const v = path ? at(value, path) : value;
  return Array.isArray(v) ? (v as unknown[]) : [];
}
