// A small set of composable checks: each takes `unknown`, records problems with their field path, and
// returns the typed value. Nothing throws, so one pass reports every problem in a document.
//
// Convention: a check is only called for a present value (objects skip absent/null optional fields);
// it returns undefined when nothing usable could be made of the value. A value returned while errors
// were recorded may be partial: callers decide by `problems.errors.length`, never by the value alone.
import type { FieldPath } from '../parse.js';

export interface Problem {
  readonly path: FieldPath;
  readonly message: string;
}

export class Problems {
  readonly errors: Problem[] = [];
  readonly warnings: Problem[] = [];

  error(path: FieldPath, message: string): void {
    this.errors.push({ path, message });
  }

  warn(path: FieldPath, message: string): void {
    this.warnings.push({ path, message });
  }
}

export type Check<T> = (value: unknown, path: FieldPath, problems: Problems) => T | undefined;

/** `spec.ports[1].number`; keys that are not identifiers are quoted: `metadata.labels["app.io/x"]`. */
export function formatPath(path: FieldPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---- scalars ---------------------------------------------------------------------------------

export function str(
  options: { nonEmpty?: boolean; test?: (s: string) => string | undefined } = {},
): Check<string> {
  return (value, path, problems) => {
    if (typeof value !== 'string') {
      problems.error(path, 'must be a string');
      return undefined;
    }
    if (options.nonEmpty && value === '') {
      problems.error(path, 'must not be empty');
      return undefined;
    }
    const complaint = options.test?.(value);
    if (complaint !== undefined) {
      problems.error(path, complaint);
      return undefined;
    }
    return value;
  };
}

export function int(min: number, max: number): Check<number> {
  return (value, path, problems) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      problems.error(path, `must be an integer in ${min}..${max}`);
      return undefined;
    }
    return value;
  };
}

export function num(min: number, max: number): Check<number> {
  return (value, path, problems) => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
      problems.error(path, `must be a number in ${min}..${max}`);
      return undefined;
    }
    return value;
  };
}

export const bool: Check<boolean> = (value, path, problems) => {
  if (typeof value !== 'boolean') {
    problems.error(path, 'must be true or false');
    return undefined;
  }
  return value;
};

export function oneOf<const T extends string>(values: readonly T[]): Check<T> {
  return (value, path, problems) => {
    if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
      problems.error(path, `must be one of ${values.join(', ')}`);
      return undefined;
    }
    return value as T;
  };
}

// ---- collections -----------------------------------------------------------------------------

export function arrayOf<T>(item: Check<T>, options: { nonEmpty?: boolean } = {}): Check<T[]> {
  return (value, path, problems) => {
    if (!Array.isArray(value)) {
      problems.error(path, 'must be a list');
      return undefined;
    }
    if (options.nonEmpty && value.length === 0) {
      problems.error(path, 'must not be empty');
      return undefined;
    }
    const out: T[] = [];
    let complete = true;
    value.forEach((v, i) => {
      const checked = item(v, [...path, i], problems);
      if (checked === undefined) complete = false;
      else out.push(checked);
    });
    // A list with holes would shift indices, and cross-field rules report by index: drop it whole.
    return complete ? out : undefined;
  };
}

/** A map with free-form keys (labels, header maps, per-port-name target ports). */
export function mapOf<T>(item: Check<T>, options: { nonEmpty?: boolean } = {}): Check<Record<string, T>> {
  return (value, path, problems) => {
    if (!isRecord(value)) {
      problems.error(path, 'must be a map');
      return undefined;
    }
    if (options.nonEmpty && Object.keys(value).length === 0) {
      problems.error(path, 'must not be empty');
      return undefined;
    }
    const out: Record<string, T> = {};
    for (const [key, v] of Object.entries(value)) {
      const checked = item(v, [...path, key], problems);
      if (checked !== undefined) out[key] = checked;
    }
    return out;
  };
}

type Shape = Record<string, Check<unknown>>;
type Checked<C> = C extends Check<infer T> ? T : never;
export type ObjectOf<S extends Shape, R extends keyof S> = { [K in R]: Checked<S[K]> } & {
  [K in Exclude<keyof S, R>]?: Checked<S[K]>;
};

export interface ObjectOptions<S extends Shape, R extends keyof S> {
  required?: readonly R[];
  /**
   * `error` refuses a field the shape does not know (with a did-you-mean), for kinds where an
   * ignored field changes what the resource means — a misspelled `notPrincipals` in an
   * authorization rule would otherwise widen it silently. Default `warn`.
   */
  unknownFields?: 'warn' | 'error';
  /** Cross-field rules; fields that failed their own check are absent here. */
  refine?: (value: Partial<ObjectOf<S, R>>, path: FieldPath, problems: Problems) => void;
}

/**
 * An object with known fields. Unknown fields are a warning unless `unknownFields: 'error'`: Istio
 * would reject them, but a newer Istio field we do not know yet should not take a whole file out of
 * service — except where ignoring it would change what the resource allows (authorization).
 */
export function obj<S extends Shape, R extends keyof S & string = never>(
  shape: S,
  options: ObjectOptions<S, R> = {},
): Check<ObjectOf<S, R>> {
  const required = new Set<string>(options.required ?? []);
  return (value, path, problems) => {
    if (!isRecord(value)) {
      problems.error(path, 'must be an object');
      return undefined;
    }
    for (const key of Object.keys(value)) {
      if (Object.hasOwn(shape, key)) continue;
      if (options.unknownFields === 'error')
        problems.error([...path, key], unknownFieldMessage(key, Object.keys(shape)));
      else problems.warn([...path, key], 'unknown field, ignored');
    }
    const out: Record<string, unknown> = {};
    for (const [key, check] of Object.entries(shape)) {
      const v = value[key];
      if (v === undefined || v === null) {
        if (required.has(key)) problems.error([...path, key], 'is required');
        continue;
      }
      const checked = check(v, [...path, key], problems);
      if (checked !== undefined) out[key] = checked;
    }
    const result = out as Partial<ObjectOf<S, R>>;
    options.refine?.(result, path, problems);
    // Partial when errors were recorded; see the convention at the top of this file.
    return result as ObjectOf<S, R>;
  };
}

/** `unknown field`, naming the known field it is closest to when one is near (a typo). */
export function unknownFieldMessage(key: string, known: readonly string[]): string {
  let best: { field: string; distance: number } | undefined;
  for (const field of known) {
    const distance = editDistance(key.toLowerCase(), field.toLowerCase());
    if (!best || distance < best.distance) best = { field, distance };
  }
  const near = best && best.distance <= Math.max(1, Math.floor(best.field.length / 4));
  return near ? `unknown field (did you mean ${best?.field ?? ''}?)` : 'unknown field';
}

/** Levenshtein distance; the names compared are short field names. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      next.push(Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + cost));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

/** Reports when more than one of `keys` is set (Istio's oneof fields). */
export function atMostOne(
  value: Record<string, unknown>,
  keys: readonly string[],
  path: FieldPath,
  problems: Problems,
): void {
  const set = keys.filter((k) => value[k] !== undefined);
  if (set.length > 1) problems.error(path, `only one of ${set.join(', ')} may be set`);
}
