// A small set of composable checks: each takes `unknown`, records problems with their field path, and
// returns the typed value. Nothing throws, so one pass reports every problem in a document.
//
// Convention: a check is only called for a present value (objects skip absent/null optional fields);
// it returns undefined when nothing usable could be made of the value. A value returned while errors
// were recorded may be partial: callers decide by `problems.errors.length`, never by the value alone.
import type { FieldPath } from '../parse.js';
import { ISTIO_API, NOT_IMPLEMENTED, NOT_SUPPORTED, type FieldSpec, type IstioMessage } from './istio-api.js';

export interface Problem {
  readonly path: FieldPath;
  readonly message: string;
}

export class Problems {
  readonly errors: Problem[] = [];
  readonly warnings: Problem[] = [];

  /**
   * `lenient`: unknown fields are warnings, as they were before they became errors. Only for a
   * version that was already accepted (the store's), so that an upgrade keeps it in force.
   */
  constructor(private readonly lenient = false) {}

  error(path: FieldPath, message: string): void {
    this.errors.push({ path, message });
  }

  warn(path: FieldPath, message: string): void {
    this.warnings.push({ path, message });
  }

  /** A field not defined here: an error (a warning when lenient). */
  unknown(path: FieldPath, message: string): void {
    if (this.lenient) this.warn(path, message);
    else this.error(path, message);
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
      // Assigned, `__proto__` would set the map's prototype: the entry (a header match, a label)
      // would vanish without a word, and a match without it matches more.
      if (key === '__proto__') {
        problems.error([...path, key], 'is not usable as a key here');
        continue;
      }
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
   * The Istio API message this object is (istio-api.ts). Its table decides the known fields: a field
   * the shape lacks is a warning (ignored) or an error (unsupported) as the table says, and a
   * field the table calls translated must be in the shape.
   */
  message?: IstioMessage;
  /**
   * Fields Istio defines here that Portolan does not implement: accepted with a warning, so that a
   * manifest written for Istio still loads, and says what it does not get.
   */
  notImplemented?: readonly string[];
  /** Cross-field rules; fields that failed their own check are absent here. */
  refine?: (value: Partial<ObjectOf<S, R>>, path: FieldPath, problems: Problems) => void;
}

export { NOT_IMPLEMENTED, NOT_SUPPORTED };

/**
 * An object with known fields. A field Istio does not define either is an error, with the closest
 * known name as a suggestion: as `istioctl validate` and the Kubernetes API server (strict field
 * validation) reject it, and because a misspelled optional field would otherwise be dropped
 * silently (`workloadSelectr`: a service with no endpoints). Istio fields Portolan does not
 * implement (`notImplemented`) are warnings.
 */
export function obj<S extends Shape, R extends keyof S & string = never>(
  shape: S,
  options: ObjectOptions<S, R> = {},
): Check<ObjectOf<S, R>> {
  const required = new Set<string>(options.required ?? []);
  const ignored = new Set<string>(options.notImplemented ?? []);
  const api: Readonly<Record<string, FieldSpec>> | undefined =
    options.message === undefined ? undefined : ISTIO_API[options.message].fields;
  if (api && options.message) checkAgainstApi(options.message, Object.keys(shape), api);
  const known = api ? Object.keys(api) : [...Object.keys(shape), ...ignored];
  return (value, path, problems) => {
    if (!isRecord(value)) {
      problems.error(path, 'must be an object');
      return undefined;
    }
    for (const key of Object.keys(value)) {
      if (Object.hasOwn(shape, key)) continue;
      const field = api && Object.hasOwn(api, key) ? api[key] : undefined;
      if (field?.status === 'unsupported')
        problems.error([...path, key], `${NOT_SUPPORTED}: ${field.reason ?? 'not translated'}`);
      else if (field !== undefined || ignored.has(key))
        problems.warn(
          [...path, key],
          field?.reason ? `${NOT_IMPLEMENTED} (${field.reason})` : NOT_IMPLEMENTED,
        );
      else problems.unknown([...path, key], unknownField(key, known));
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

/**
 * A validator and the Istio API table disagreeing is a programming error, reported when the module
 * loads (every test importing the validators fails): a shape field the API does not define, or a
 * field the table says is translated that the shape does not check.
 */
function checkAgainstApi(
  message: string,
  shapeKeys: readonly string[],
  api: Readonly<Record<string, FieldSpec>>,
): void {
  const extra = shapeKeys.filter((k) => !Object.hasOwn(api, k));
  const missing = Object.entries(api)
    .filter(([k, f]) => f.status === 'translated' && !shapeKeys.includes(k))
    .map(([k]) => k);
  if (extra.length > 0 || missing.length > 0)
    throw new Error(
      `validator for Istio ${message} disagrees with istio-api.ts: not in the API [${extra.join(', ')}], translated but unchecked [${missing.join(', ')}]`,
    );
}

/** `unknown field (did you mean "workloadSelector"?)`, or the known fields when none is close. */
export function unknownField(key: string, known: readonly string[]): string {
  const suggestion = closest(key, known);
  if (suggestion !== undefined) return `unknown field (did you mean "${suggestion}"?)`;
  return `unknown field (known here: ${known.join(', ')})`;
}

/**
 * The known name `key` most likely meant: the same letters in another case or with `_`/`-` (the
 * protos' snake_case), else the nearest by edit distance (a transposition counts once), within
 * about a third of the name.
 */
export function closest(key: string, known: readonly string[]): string | undefined {
  const fold = (s: string): string => s.toLowerCase().replace(/[-_]/g, '');
  const folded = known.find((k) => fold(k) === fold(key));
  if (folded !== undefined) return folded;
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(key.toLowerCase(), name.toLowerCase());
    if (distance <= Math.max(1, Math.floor(name.length / 3)) && (!best || distance < best.distance))
      best = { name, distance };
  }
  return best?.name;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  const at = (i: number, j: number): number => d[i * cols + j] ?? 0;
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, at(i - 2, j - 2) + 1);
      d[i * cols + j] = v;
    }
  }
  return at(rows - 1, cols - 1);
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
