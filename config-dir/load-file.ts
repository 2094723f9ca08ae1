// One file's text → its validated resources, or the reasons it cannot be used. A file is all or
// nothing: any error rejects the whole file, so a half-applied edit never reaches the proxies.
import { parseConfigText, parsePrecisely, type FieldPath, type SourceDocument } from './parse.js';
import type { AnyConfigResource } from '../mesh/types.js';
import type { ConfigIssue } from './issue.js';
import { validateResource } from './validate/resource.js';
import { formatPath, isRecord, Problems, type Problem } from './validate/schema.js';

export { CONFIG_EXTENSIONS, isConfigFile } from './config-files.js';

export interface FileLoad {
  /** Relative to the watched directory, `/`-separated. */
  readonly path: string;
  readonly errors: readonly ConfigIssue[];
  readonly warnings: readonly ConfigIssue[];
  /** Empty when there are errors. */
  readonly resources: readonly AnyConfigResource[];
  /**
   * Where a ServiceEntry's `spec.hosts[i]` is written, to report a host another file holds. Found
   * when asked (a conflict is rare, and a field's line may need the precise parse).
   */
  hostPosition(resource: AnyConfigResource, i: number): HostPosition | undefined;
}

export interface HostPosition {
  readonly line: number;
  readonly path: string;
}

export const NO_POSITIONS = (): HostPosition | undefined => undefined;

/**
 * `lenient`: unknown fields are warnings (for the store's last accepted version of a file, which
 * an earlier Portolan accepted when they were).
 *
 * The per-file boundary: this never throws. Whatever a parser or a validator throws on this text
 * (a bug of ours: validators record problems, they do not throw) rejects this file alone, at the
 * line of the resource being checked, and its last good version stays in force; the registry goes
 * on with the other files of the batch. Everything after this step (claims, merge, conversion, the
 * mesh config) sees only resources a validator returned without an error.
 */
export function loadConfigFile(
  path: string,
  text: string,
  {
    lenient = false,
    check = validateResource,
  }: {
    lenient?: boolean;
    /** Tests only: the resource check (to plant one that throws). */
    check?: typeof validateResource;
  } = {},
): FileLoad {
  const at: { line: number } = { line: 0 };
  try {
    return loadChecked(path, text, lenient, check, at);
  } catch (e) {
    return rejected(path, [{ line: at.line, message: internalError(e) }]);
  }
}

/** `internal error: TypeError: …; please report it`: what a bug that threw looks like to the user. */
function internalError(e: unknown): string {
  const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return `internal error while checking this resource (${what.slice(0, 300)}); the file is rejected, please report it`;
}

function rejected(path: string, errors: readonly ConfigIssue[]): FileLoad {
  return { path, errors, warnings: [], resources: [], hostPosition: NO_POSITIONS };
}

/** `at.line` follows the resource being checked, for the boundary's report. */
function loadChecked(
  path: string,
  text: string,
  lenient: boolean,
  check: typeof validateResource,
  at: { line: number },
): FileLoad {
  const parsed = parseConfigText(text);
  if (parsed.errors.length > 0) return rejected(path, parsed.errors);

  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  const resources: AnyConfigResource[] = [];
  /** Each ServiceEntry's document and path in it, to find its hosts' lines when asked. */
  const written = new Map<AnyConfigResource, { readonly doc: number; readonly at: FieldPath }>();
  for (const doc of parsed.documents) {
    for (const where of resourcePaths(doc)) {
      const line = doc.locate(where).line;
      at.line = line;
      const problems = new Problems(lenient);
      const value = valueAt(doc.value, where);
      const resource = check(value, where, { file: path, line }, problems);
      errors.push(...problems.errors.map((p) => toIssue(doc, p)));
      warnings.push(...problems.warnings.map((p) => toIssue(doc, p)));
      if (!resource) continue;
      resources.push(resource);
      if (resource.kind === 'ServiceEntry') written.set(resource, { doc: doc.index, at: where });
    }
  }
  if (errors.length > 0) return { path, errors, warnings, resources: [], hostPosition: NO_POSITIONS };
  return {
    path,
    errors,
    warnings,
    resources,
    // Parsed again when asked: neither the documents nor a precise parse is kept with the file.
    // Asked later, outside the boundary above: a throw here finds no line (undefined) rather than
    // escaping into the claims of every file.
    hostPosition: (resource, i) => {
      const w = written.get(resource);
      if (!w) return undefined;
      const hostPath = [...w.at, 'spec', 'hosts', i];
      try {
        const doc = parsePrecisely(text).documents.find((d) => d.index === w.doc);
        return doc && { line: doc.locate(hostPath).line, path: formatPath(hostPath) };
      } catch {
        return undefined;
      }
    },
  };
}

/** `file:line path: message`, the form used in logs and status. */
export function formatIssue(file: string, issue: ConfigIssue): string {
  const where = issue.line > 0 ? `${file}:${issue.line}` : file;
  return issue.path ? `${where} ${issue.path}: ${issue.message}` : `${where} ${issue.message}`;
}

// A document is one resource, a `kind: List` with `items`, or (as kubectl also accepts) a bare array.
function resourcePaths(doc: SourceDocument): FieldPath[] {
  const value = doc.value;
  if (value === null || value === undefined) return []; // empty document, e.g. a trailing `---`
  if (Array.isArray(value)) return value.map((_, i) => [i]);
  if (isRecord(value) && value.kind === 'List' && Array.isArray(value.items))
    return value.items.map((_, i) => ['items', i]);
  return [[]];
}

function valueAt(root: unknown, path: FieldPath): unknown {
  let value = root;
  for (const segment of path) value = (value as Record<string | number, unknown>)[segment];
  return value;
}

function toIssue(doc: SourceDocument, problem: Problem): ConfigIssue {
  const { line, column } = doc.locate(problem.path);
  const path = formatPath(problem.path);
  return { line, column, ...(path && { path }), message: problem.message };
}
