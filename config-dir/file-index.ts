// What the registry needs to know about all files without a pass over them: which files' versions
// in force claim each key (claims.ts), which files have a candidate waiting, and which are broken.
// Kept up to date on every change of one file's record, at the cost of that file's claims.
import { claimsOf } from './claims.js';
import { comparePaths } from './merge.js';
import type { FileLoad } from './load-file.js';

/** The parts of a file's record the index follows. */
export interface IndexedFile {
  readonly good: FileLoad | undefined;
  readonly candidate?: unknown;
  readonly errors: readonly unknown[];
}

export class FileIndex {
  /** Claim key → the paths whose version in force claims it. */
  private readonly claimants = new Map<string, Set<string>>();
  private readonly pending = new Set<string>();
  private readonly broken = new Set<string>();

  /** Records that `path`'s record went from `before` to `after` (undefined: no record). */
  update(path: string, before: IndexedFile | undefined, after: IndexedFile | undefined): void {
    if (before?.good !== after?.good) {
      if (before?.good) this.unclaim(path, before.good);
      if (after?.good) this.claim(path, after.good);
    }
    setMember(this.pending, path, after?.candidate !== undefined);
    setMember(this.broken, path, after !== undefined && after.errors.length > 0);
  }

  /** The paths whose version in force claims `key`. */
  claimantsOf(key: string): ReadonlySet<string> {
    return this.claimants.get(key) ?? EMPTY;
  }

  /** Paths with a candidate waiting (to be taken, or held back). */
  pendingPaths(): ReadonlySet<string> {
    return this.pending;
  }

  brokenCount(): number {
    return this.broken.size;
  }

  /** The first broken file by path, to name in the registry's failure. */
  firstBroken(): string | undefined {
    let first: string | undefined;
    for (const path of this.broken) if (first === undefined || comparePaths(path, first) < 0) first = path;
    return first;
  }

  private claim(path: string, load: FileLoad): void {
    for (const key of claimsOf(load).keys()) {
      const set = this.claimants.get(key);
      if (set) set.add(path);
      else this.claimants.set(key, new Set([path]));
    }
  }

  private unclaim(path: string, load: FileLoad): void {
    for (const key of claimsOf(load).keys()) {
      const set = this.claimants.get(key);
      set?.delete(path);
      if (set?.size === 0) this.claimants.delete(key);
    }
  }
}

const EMPTY: ReadonlySet<string> = new Set();

function setMember(set: Set<string>, path: string, member: boolean): void {
  if (member) set.add(path);
  else set.delete(path);
}
