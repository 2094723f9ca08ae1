// Who holds a hostname or a resource identity that two files define. Istio's rule for two
// resources that claim one thing is "oldest wins" (by creation time); a file has no creation time
// of its own, so here the established holder wins: the file whose version in force already claims
// it. A file's new version that claims what another file holds is held back whole — the file is
// reported with an error naming the holder, its previous version stays in force, and nothing
// served changes — until the holder lets go. Only among newcomers (no file held it) does the first
// by path win, the order a fresh start has always used.
//
// "In force" spans restarts: at start each file's version in force is its last accepted one from
// the store (registry.ts), so a file added while the server was down does not take over either.
import { resourceKey, type AnyConfigResource } from '../mesh/types.js';
import type { ConfigIssue } from './issue.js';
import type { FileLoad, HostPosition } from './load-file.js';
import { comparePaths, refOf, type ConfigConflict } from './merge.js';

export interface Claim {
  /** `resource Kind/namespace/name` or `host example.com`. */
  readonly key: string;
  readonly type: ConfigConflict['type'];
  /** The resource key or the hostname. */
  readonly subject: string;
  readonly resource: AnyConfigResource;
  /** Where the claim is written: the resource's first line, or the host in `spec.hosts`. */
  readonly line: number;
  readonly path?: string;
}

/** One file's versions, as the registry holds them. */
export interface FileVersions {
  readonly path: string;
  /** The version in force (undefined if none is). */
  readonly good: FileLoad | undefined;
  /** A newer version that validated and waits to replace `good`. */
  readonly candidate: FileLoad | undefined;
}

export interface Resolution {
  /** Files whose candidate is held back, with one error per claim another file holds. */
  readonly heldBack: ReadonlyMap<string, readonly ConfigIssue[]>;
  /** The same clashes as conflicts (kept: the holder, ignored: the newcomer), for /debug/configz. */
  readonly conflicts: readonly ConfigConflict[];
}

const cache = new WeakMap<FileLoad, ReadonlyMap<string, Claim>>();

/**
 * What a file version claims across files: each resource identity, and each ServiceEntry host. A
 * second claim on one key inside the same file is the merge's concern (first in document order).
 */
export function claimsOf(load: FileLoad): ReadonlyMap<string, Claim> {
  const cached = cache.get(load);
  if (cached) return cached;
  const claims = new Map<string, Claim>();
  for (const resource of load.resources) {
    const subject = resourceKey(resource);
    const key = `resource ${subject}`;
    if (!claims.has(key))
      claims.set(key, { key, type: 'duplicate-resource', subject, resource, line: resource.line });
    if (resource.kind !== 'ServiceEntry') continue;
    resource.spec.hosts.forEach((host, i) => {
      const hostKey = `host ${host}`;
      if (claims.has(hostKey)) return;
      // The host's line is looked up only if the claim is reported, and then once.
      let found: { at: HostPosition | undefined } | undefined;
      const at = (): HostPosition | undefined => (found ??= { at: load.hostPosition(resource, i) }).at;
      claims.set(hostKey, {
        key: hostKey,
        type: 'duplicate-host',
        subject: host,
        resource,
        get line() {
          return at()?.line ?? resource.line;
        },
        get path() {
          return at()?.path;
        },
      });
    });
  }
  cache.set(load, claims);
  return claims;
}

export function resolveClaims(files: readonly FileVersions[]): Resolution {
  const sorted = [...files].sort((a, b) => comparePaths(a.path, b.path));
  const held = new Set<string>();
  const version = (f: FileVersions): FileLoad | undefined =>
    held.has(f.path) ? f.good : (f.candidate ?? f.good);
  const established = (f: FileVersions, key: string): boolean =>
    f.good !== undefined && claimsOf(f.good).has(key);

  // Hold back every candidate that loses a claim, until none does. A held file falls back to its
  // version in force, which may clash with another candidate in turn: hence the loop. Each round
  // holds at least one more candidate, so it ends.
  for (;;) {
    let more = false;
    for (const [key, holders] of claimants(sorted, version)) {
      if (holders.length < 2) continue;
      const winner = holders.find((f) => established(f, key)) ?? holders[0];
      for (const f of holders) {
        if (f === winner || f.candidate === undefined || held.has(f.path)) continue;
        held.add(f.path);
        more = true;
      }
    }
    if (!more) break;
  }
  // A candidate held for a claim whose winner was held back later may clash with nothing now.
  for (const f of sorted) {
    if (!held.has(f.path)) continue;
    held.delete(f.path);
    if (clashes(f, sorted, version).length > 0) held.add(f.path);
  }

  const heldBack = new Map<string, ConfigIssue[]>();
  const conflicts: ConfigConflict[] = [];
  for (const f of sorted) {
    if (!held.has(f.path) || !f.candidate) continue;
    const issues: ConfigIssue[] = [];
    for (const { claim, holder } of clashes(f, sorted, version, f.candidate)) {
      const kept = refOf(holder);
      conflicts.push({ type: claim.type, subject: claim.subject, kept, ignored: refOf(claim.resource) });
      issues.push({
        line: claim.line,
        ...(claim.path && { path: claim.path }),
        message:
          claim.type === 'duplicate-host'
            ? `host ${claim.subject} is already served by ${kept.resource} (${kept.file}:${kept.line}); the established definition stays in force and this file is not applied until one of them is changed`
            : `${claim.subject} is already defined in ${kept.file}:${kept.line}; the established definition stays in force and this file is not applied until one of them is changed`,
      });
    }
    heldBack.set(f.path, issues);
  }
  return { heldBack, conflicts };
}

/** Every key claimed, with the files claiming it in path order. */
function claimants(
  sorted: readonly FileVersions[],
  version: (f: FileVersions) => FileLoad | undefined,
): Map<string, FileVersions[]> {
  const out = new Map<string, FileVersions[]>();
  for (const f of sorted) {
    const v = version(f);
    if (!v) continue;
    for (const key of claimsOf(v).keys()) {
      const list = out.get(key);
      if (list) list.push(f);
      else out.set(key, [f]);
    }
  }
  return out;
}

/** The claims of `mine` (default: f's candidate) that another file's version holds. */
function clashes(
  f: FileVersions,
  sorted: readonly FileVersions[],
  version: (f: FileVersions) => FileLoad | undefined,
  mine: FileLoad | undefined = f.candidate,
): { claim: Claim; holder: AnyConfigResource }[] {
  if (!mine) return [];
  const out: { claim: Claim; holder: AnyConfigResource }[] = [];
  for (const claim of claimsOf(mine).values()) {
    for (const other of sorted) {
      if (other === f) continue;
      const theirs = version(other);
      const held = theirs && claimsOf(theirs).get(claim.key);
      if (held) {
        out.push({ claim, holder: held.resource });
        break;
      }
    }
  }
  return out;
}
