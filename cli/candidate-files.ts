// Reading a candidate config directory for `portolan diff`: the files the config directory would
// load from it (config-dir/watcher.ts and read-file.ts: `.yaml`, `.yml` and `.json` files, hidden
// segments skipped, regular files or symlinks to them, 10 MiB each), and nothing else.
//
// The candidate is often a checkout of a pull request, and its files are sent to the control plane
// and echoed in problems that land in CI logs: so a symlink whose target is outside the directory
// is a problem naming the link, never followed (the config directory itself follows any symlink).
// Every path is resolved to its real path before it is read, and the last component is opened with
// O_NOFOLLOW, so a link cannot slip in between the check and the read. The walk is bounded in
// config files, in entries looked at, in bytes (the whole request body) and in time.
import { constants, type Stats } from 'node:fs';
import { open, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { DEFAULT_CANDIDATE_LIMITS as SERVER_LIMITS } from '../config-dir/candidate-limits.js';
import { isConfigFile } from '../config-dir/config-files.js';
import { ConfigFileReader, DEFAULT_READ_LIMITS, type ReadFs } from '../config-dir/read-file.js';
import { MAX_DIFF_BODY_BYTES } from '../model/admin-api.js';
import { OptionError } from '../adapters/option-values.js';

export interface CandidateFile {
  /** Relative to the candidate directory, `/`-separated. */
  readonly path: string;
  readonly content: string;
}

/** A file that cannot be sent as it is (line 0: the whole file, as in config-dir/load-file.ts). */
export interface FileProblem {
  readonly file: string;
  readonly line: number;
  readonly message: string;
}

export interface CandidateRead {
  readonly files: readonly CandidateFile[];
  readonly problems: readonly FileProblem[];
}

export interface CandidateLimits {
  /** Config files (those the directory would load). */
  readonly maxFiles: number;
  /** Directory entries looked at, config files or not: a tree of other files is bounded too. */
  readonly maxEntries: number;
  readonly maxFileBytes: number;
  /** The JSON request body, `{"files":[…]}` (POST /debug/diff refuses more). */
  readonly maxBodyBytes: number;
  readonly readTimeoutMs: number;
  /** The whole walk and every read. */
  readonly totalTimeoutMs: number;
}

/** What POST /debug/diff accepts (admin/diff.ts, config-dir/candidate.ts): refused here first. */
export const DEFAULT_CANDIDATE_LIMITS: CandidateLimits = {
  maxFiles: SERVER_LIMITS.maxFiles,
  maxEntries: 5 * SERVER_LIMITS.maxFiles,
  maxFileBytes: Math.min(DEFAULT_READ_LIMITS.maxBytes, SERVER_LIMITS.maxFileBytes),
  maxBodyBytes: MAX_DIFF_BODY_BYTES,
  readTimeoutMs: DEFAULT_READ_LIMITS.timeoutMs,
  totalTimeoutMs: 60_000,
};

/** The candidate as a whole cannot be evaluated (too many files, too large, too slow to read). */
export class CandidateError extends Error {}

/** Reads at once, at most this many: each read is a few round trips through the thread pool. */
const READ_CONCURRENCY = 8;

/** Opens only what is not a symlink, without waiting on a FIFO (read-file.ts checks the type). */
const NO_FOLLOW_FS: ReadFs = {
  open: (path) => open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW),
};

interface Found {
  readonly rel: string;
  /** The real path: no symlink in it. */
  readonly real: string;
}

export async function readCandidate(
  dir: string,
  limits: CandidateLimits = DEFAULT_CANDIDATE_LIMITS,
): Promise<CandidateRead> {
  const deadline = Date.now() + limits.totalTimeoutMs;
  const root = await realRoot(dir);
  const walk = new Walk(root, limits, deadline);
  await walk.run();
  const reader = new ConfigFileReader(
    { maxBytes: limits.maxFileBytes, timeoutMs: limits.readTimeoutMs },
    NO_FOLLOW_FS,
  );
  const texts: (CandidateFile | FileProblem | undefined)[] = [];
  let bytes = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < walk.found.length) {
      const i = next++;
      const f = walk.found[i] as Found;
      checkTime(deadline, limits);
      const read = await reader.read(f.real);
      if (read.kind === 'gone') continue; // removed while we looked: as the config directory sees it
      if (read.kind === 'error') {
        texts[i] = { file: f.rel, line: 0, message: read.message };
        continue;
      }
      bytes += Buffer.byteLength(read.text);
      if (bytes > limits.maxBodyBytes) throw tooLarge(limits);
      texts[i] = { path: f.rel, content: read.text };
    }
  };
  await Promise.all(Array.from({ length: READ_CONCURRENCY }, worker));
  const files: CandidateFile[] = [];
  const problems: FileProblem[] = [...walk.problems];
  for (const t of texts) {
    if (t === undefined) continue;
    if ('content' in t) files.push(t);
    else problems.push(t);
  }
  problems.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  return { files, problems };
}

/** The request body for POST /debug/diff; refused here when the server would refuse it (413). */
export function diffRequestBody(files: readonly CandidateFile[], limits = DEFAULT_CANDIDATE_LIMITS): string {
  const body = JSON.stringify({ files });
  if (Buffer.byteLength(body) > limits.maxBodyBytes) throw tooLarge(limits);
  return body;
}

async function realRoot(dir: string): Promise<string> {
  let info: Stats;
  try {
    info = await stat(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new OptionError(
      code === 'ENOENT' ? `--config-dir ${dir} does not exist` : `--config-dir ${dir}: ${String(e)}`,
    );
  }
  if (!info.isDirectory()) throw new OptionError(`--config-dir ${dir} is not a directory`);
  return realpath(resolve(dir));
}

/** The directory tree, breadth first in name order: the config files to read, and the links refused. */
class Walk {
  readonly found: Found[] = [];
  readonly problems: FileProblem[] = [];
  private entries = 0;
  /** Real paths of the directories listed: a symlink back into the tree is listed once. */
  private readonly listed = new Set<string>();

  constructor(
    private readonly root: string,
    private readonly limits: CandidateLimits,
    private readonly deadline: number,
  ) {}

  async run(): Promise<void> {
    const queue: Found[] = [{ rel: '', real: this.root }];
    this.listed.add(this.root);
    for (let dir = queue.shift(); dir; dir = queue.shift()) {
      checkTime(this.deadline, this.limits);
      const entries = await readdir(dir.real, { withFileTypes: true }).catch(() => []);
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        // Hidden: editor swap files, a ConfigMap volume's `..data` (watcher.ts, isHidden).
        if (entry.name.startsWith('.')) continue;
        if (++this.entries > this.limits.maxEntries)
          throw new CandidateError(
            `the candidate directory holds more than ${this.limits.maxEntries} entries; not evaluated`,
          );
        const at: Found = {
          rel: dir.rel ? `${dir.rel}/${entry.name}` : entry.name,
          real: join(dir.real, entry.name),
        };
        if (entry.isDirectory()) this.enter(at, queue);
        else if (entry.isFile()) this.file(at);
        else if (entry.isSymbolicLink()) await this.link(at, queue);
        // Anything else named like a config file is read, and refused there (a FIFO, say).
        else if (isConfigFile(at.rel)) this.file(at);
      }
    }
  }

  private enter(dir: Found, queue: Found[]): void {
    if (this.listed.has(dir.real)) return;
    this.listed.add(dir.real);
    queue.push(dir);
  }

  private file(f: Found): void {
    if (!isConfigFile(f.rel)) return;
    if (this.found.length >= this.limits.maxFiles)
      throw new CandidateError(
        `the candidate directory holds more than ${this.limits.maxFiles} config files; not evaluated`,
      );
    this.found.push(f);
  }

  private async link(at: Found, queue: Found[]): Promise<void> {
    const real = await realpath(at.real).catch(() => undefined);
    // A dangling link loads nothing in the config directory either.
    if (real === undefined) return;
    const info = await stat(real).catch(() => undefined);
    if (!info) return;
    if (!info.isDirectory() && !isConfigFile(at.rel)) return;
    if (real !== this.root && !real.startsWith(`${this.root}${sep}`)) {
      const target = await readlink(at.real).catch(() => real);
      this.problems.push({
        file: at.rel,
        line: 0,
        message: `a symlink to ${target}, outside the candidate directory: not followed`,
      });
      return;
    }
    if (info.isDirectory()) this.enter({ rel: at.rel, real }, queue);
    else this.file({ rel: at.rel, real });
  }
}

function checkTime(deadline: number, limits: CandidateLimits): void {
  if (Date.now() > deadline)
    throw new CandidateError(
      `reading the candidate directory took longer than ${limits.totalTimeoutMs} ms; not evaluated`,
    );
}

function tooLarge(limits: CandidateLimits): CandidateError {
  return new CandidateError(
    `the candidate directory's config files come to more than ${limits.maxBodyBytes / (1024 * 1024)} MiB; not evaluated`,
  );
}
