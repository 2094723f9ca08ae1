// What one candidate evaluation (POST /debug/diff) may hold: apart from the evaluation, so the CLI
// refuses an over-limit candidate before sending it without loading the config pipeline.
import { MAX_CONFIG_FILE_BYTES } from './read-file.js';

export interface CandidateLimits {
  readonly maxFiles: number;
  /** Per file, in UTF-8 bytes: the directory's own read limit. */
  readonly maxFileBytes: number;
  /** The whole evaluation (here and what its caller does with it). */
  readonly deadlineMs: number;
}

/**
 * The directory itself has no file-count limit of its own (the inotify watch limit is the
 * system's); a candidate gets one, at twice the largest directory the benchmarks run (10,000 files).
 */
export const DEFAULT_CANDIDATE_LIMITS: CandidateLimits = {
  maxFiles: 20_000,
  maxFileBytes: MAX_CONFIG_FILE_BYTES,
  deadlineMs: 10_000,
};
