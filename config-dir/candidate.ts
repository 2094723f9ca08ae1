// A candidate of the whole config directory — its next version, uploaded as text (`portolan diff`) —
// evaluated as the directory would take it, with nothing read from disk and nothing changed in the
// running registry: each file is loaded by the same code (load-file.ts), claims across files are
// settled against the versions in force (claims.ts: the established definition wins, exactly as if
// the files were written now), every file is merged (merge.ts) and converted with the outside
// WorkloadEntries (publication.ts fullMerge), and the traffic config becomes a mesh config
// (mesh/config-change.ts). A file that is invalid, or held back, keeps its version in force, as it
// would on disk; a file the candidate lacks is removed.
//
// Bounded: the file count and each file's size are checked first (checkCandidateFiles), one file's
// parse is bounded by the loader, and the whole evaluation by a deadline checked between files; it
// yields to the event loop as it goes, so serving carries on meanwhile.
import type { RegistrySnapshot } from '../model/change.js';
import { nextMeshConfig } from '../mesh/config-change.js';
import type { MeshConfig } from '../mesh/mesh-config.js';
import type { WorkloadEntryResource } from '../mesh/types.js';
import { resolveClaims, type FileVersions } from './claims.js';
import { emptyFileRejected } from './file-records.js';
import type { ConfigIssue } from './issue.js';
import { isConfigFile, loadConfigFile, type FileLoad } from './load-file.js';
import { comparePaths, mergeFiles } from './merge.js';
import { fullMerge } from './publication.js';
import { DEFAULT_CANDIDATE_LIMITS, type CandidateLimits } from './candidate-limits.js';

/** One file of a candidate: its path relative to the directory's root, `/`-separated, and its text. */
export interface CandidateFile {
  readonly path: string;
  readonly content: string;
}

/** A file the candidate would have rejected (or held back), as /debug/configz would show it. */
export interface CandidateProblem {
  readonly file: string;
  readonly line: number;
  readonly message: string;
}

/** What a candidate is evaluated against: the running directory's state, read once. */
export interface CandidateBase {
  /** Every file the directory knows, with its version in force (undefined: none). */
  readonly inForce: ReadonlyMap<string, FileLoad | undefined>;
  /** The WorkloadEntries from outside the directory (auto-registered VMs). */
  readonly outsideEntries: readonly WorkloadEntryResource[];
  /** The mesh config in force (the candidate's generation follows it). */
  readonly mesh: MeshConfig;
}

export interface CandidateEvaluation {
  /** The config registry's services and endpoints, had the candidate been written. */
  readonly snapshot: RegistrySnapshot;
  readonly meshConfig: MeshConfig;
  /** By file; a file's own in the order /debug/configz lists them. */
  readonly problems: readonly CandidateProblem[];
}

export { DEFAULT_CANDIDATE_LIMITS, type CandidateLimits } from './candidate-limits.js';

/** A candidate refused as a whole: `status` is the HTTP status its caller answers with. */
export class CandidateError extends Error {
  constructor(
    readonly status: 400 | 413 | 503,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Refuses a candidate that cannot be evaluated: too many files or a file too large (413), a path
 * that is not a plain relative one (absolute, `..`, `.`, empty segments, a backslash or NUL: 400,
 * so a candidate can name nothing outside the directory), or a path given twice (400).
 */
export function checkCandidateFiles(
  files: readonly CandidateFile[],
  limits: CandidateLimits = DEFAULT_CANDIDATE_LIMITS,
): void {
  if (files.length > limits.maxFiles)
    throw new CandidateError(
      413,
      `files: ${files.length} files, more than the ${limits.maxFiles} a candidate may have`,
    );
  const seen = new Set<string>();
  for (const [i, file] of files.entries()) {
    const bad = badPath(file.path);
    if (bad) throw new CandidateError(400, `files[${i}].path ${JSON.stringify(file.path)}: ${bad}`);
    if (seen.has(file.path))
      throw new CandidateError(400, `files[${i}].path ${JSON.stringify(file.path)}: given twice`);
    seen.add(file.path);
    // Bytes as the file would have them: a quick bound on characters first (UTF-8 is ≥ 1 byte each).
    if (file.content.length > limits.maxFileBytes || byteLength(file.content) > limits.maxFileBytes)
      throw new CandidateError(
        413,
        `files[${i}] ${file.path}: larger than ${limits.maxFileBytes} bytes, the limit of a config file`,
      );
  }
}

/** Why `path` is not a plain relative path below the directory, or undefined. */
function badPath(path: string): string | undefined {
  if (path === '') return 'empty';
  if (path.includes('\0')) return 'contains NUL';
  if (path.includes('\\')) return 'contains a backslash (use / separators)';
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return 'absolute; paths are relative to the directory';
  for (const segment of path.split('/')) {
    if (segment === '') return 'has an empty segment';
    if (segment === '.' || segment === '..')
      return `has a "${segment}" segment; paths stay inside the directory`;
  }
  return undefined;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Clock and yield, injectable for tests of the deadline. */
export interface EvaluationClock {
  now(): number;
  /** Lets the event loop run (the server keeps serving meanwhile). */
  pause(): Promise<void>;
}

const REAL_CLOCK: EvaluationClock = {
  now: () => Date.now(),
  pause: () => new Promise<void>((resolve) => setImmediate(resolve)),
};

/** Work between two pauses: a few milliseconds keep the event loop's latency low. */
const SLICE_MS = 10;

/** When an evaluation must be over (a clock time), and the limit it came from, for the message. */
export interface Deadline {
  readonly at: number;
  readonly limitMs: number;
}

/**
 * Evaluates `files` (checked by checkCandidateFiles) against `base` by `deadline`; past it, a
 * CandidateError (503).
 */
export async function evaluateCandidate(
  files: readonly CandidateFile[],
  base: CandidateBase,
  deadline: Deadline,
  clock: EvaluationClock = REAL_CLOCK,
): Promise<CandidateEvaluation> {
  const problems: CandidateProblem[] = [];
  const versions: FileVersions[] = [];
  let sliceStart = clock.now();
  const sorted = [...files].sort((a, b) => comparePaths(a.path, b.path));
  for (const file of sorted) {
    // What the directory would not read at all (hidden files, other extensions) is not read here.
    if (!isConfigFile(file.path) || file.path.split('/').some((s) => s.startsWith('.'))) continue;
    const good = base.inForce.get(file.path);
    const load = emptied(file.content, good)
      ? emptyFileRejected(file.path)
      : loadConfigFile(file.path, file.content);
    if (load.errors.length > 0) {
      problems.push(...load.errors.map((e) => problemOf(file.path, e)));
      versions.push({ path: file.path, good, candidate: undefined });
    } else {
      versions.push({ path: file.path, good, candidate: load });
    }
    const now = clock.now();
    if (now > deadline.at) throw overDeadline(deadline);
    if (now - sliceStart >= SLICE_MS) {
      await clock.pause();
      sliceStart = clock.now();
    }
  }
  // A file of the directory that the candidate lacks is gone: it is not among the versions.
  const { heldBack, conflicts } = resolveClaims(versions);
  const loads: FileLoad[] = [];
  for (const v of versions) {
    const issues = heldBack.get(v.path);
    if (issues) problems.push(...issues.map((e) => problemOf(v.path, e)));
    const load = issues ? v.good : (v.candidate ?? v.good);
    if (load) loads.push(load);
  }
  const merged = mergeFiles(loads);
  const publication = fullMerge(merged, conflicts, base.outsideEntries);
  const meshConfig = nextMeshConfig(base.mesh, merged);
  if (clock.now() > deadline.at) throw overDeadline(deadline);
  // By file (stable: a file's problems in the order /debug/configz lists them).
  problems.sort((a, b) => comparePaths(a.file, b.file));
  return { snapshot: publication.snapshot, meshConfig, problems };
}

/** A file emptied while its version in force defines something: rejected, as read-step.ts settles it. */
function emptied(text: string, good: FileLoad | undefined): boolean {
  return text.trim() === '' && Boolean(good?.resources.length);
}

/** `spec.ports[1].number: must be …`: the issue as /debug/configz lists it, without file and line. */
function problemOf(file: string, issue: ConfigIssue): CandidateProblem {
  return { file, line: issue.line, message: issue.path ? `${issue.path}: ${issue.message}` : issue.message };
}

/** The refusal of an evaluation past its deadline (here, or in what its caller does next). */
export function overDeadline(deadline: Deadline): CandidateError {
  return new CandidateError(
    503,
    `the candidate's evaluation took longer than ${deadline.limitMs} ms; refused, nothing was evaluated (try a smaller change, or when the server is less busy)`,
  );
}
