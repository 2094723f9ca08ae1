// How far a change of the mesh config reaches, as the generators read the config: the hostnames
// whose VirtualServices or DestinationRules changed and the kinds read wholesale that changed, or
// everything. The generators that say so (ResourceGenerator.configByHost) read those two kinds only
// through the index's per-host lookups, which the resource cache records per resource, and say which
// kinds read wholesale they read at all (ResourceGenerator.wholeKinds). So a DestinationRule edit
// rebuilds what looked up its host, and an AuthorizationPolicy edit the listeners, not every resource
// of every stream.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import { resolveHost } from '../../mesh/hosts.js';
import { resolvedHosts } from '../../mesh/virtual-service-index.js';
import type { ConfigResource } from '../../mesh/types.js';
import { sameData } from '../../model/change.js';
import { configHasFaults } from '../traffic/route-context.js';

type AnyResource = ConfigResource<unknown>;

/**
 * Config kinds read wholesale (by namespace and workload selector, not by host): a change of one
 * reaches every resource of the generators that read it.
 */
export const WHOLE_KINDS = [
  'gateways',
  'sidecars',
  'peerAuthentications',
  'authorizationPolicies',
  'requestAuthentications',
  'workloadGroups',
] as const;

export type WholeKind = (typeof WHOLE_KINDS)[number];

/** How far a config change reaches: the hosts whose rules changed, and the kinds read wholesale that did. */
export interface ConfigReach {
  readonly hosts: ReadonlySet<string>;
  readonly kinds: ReadonlySet<WholeKind>;
}

/**
 * The hostnames whose rules differ between `prev` and `next` (resolved, as lookups name them) and
 * the kinds read wholesale that differ, or undefined when the change may reach anything: a changed
 * rule has a wildcard host, rules of the same kind changed their relative order (precedence among
 * equals is config order), or whether any route injects faults (gRPC listeners' filter chain)
 * flipped.
 */
export function configChangeReach(prev: MeshConfig, next: MeshConfig): ConfigReach | undefined {
  const hosts = new Set<string>();
  const kinds = new Set<WholeKind>();
  if (prev === next) return { hosts, kinds };
  for (const kind of WHOLE_KINDS) if (!sameResources(prev[kind] ?? [], next[kind] ?? [])) kinds.add(kind);
  if (configHasFaults(prev) !== configHasFaults(next)) return undefined;
  const rules = [
    changedHosts(prev.destinationRules, next.destinationRules, (r) => [
      resolveHost(r.spec.host, r.namespace),
    ]),
    changedHosts(prev.virtualServices, next.virtualServices, resolvedHosts),
  ];
  for (const changed of rules) {
    if (!changed) return undefined;
    for (const host of changed) {
      if (host.startsWith('*')) return undefined;
      hosts.add(host);
    }
  }
  return { hosts, kinds };
}

function sameResources(a: readonly AnyResource[], b: readonly AnyResource[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!sameResource(a[i], b[i])) return false;
  return true;
}

/** The same resource, as the generators see it: where it was read from (file, line) does not matter. */
function sameResource(a: AnyResource | undefined, b: AnyResource | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return (
    a.kind === b.kind &&
    a.apiVersion === b.apiVersion &&
    a.namespace === b.namespace &&
    a.name === b.name &&
    sameData(a.labels, b.labels) &&
    sameData(a.annotations, b.annotations) &&
    sameData(a.spec, b.spec)
  );
}

/** The hosts of the rules added, removed or changed; undefined if the rules kept in both changed order. */
function changedHosts<T extends AnyResource>(
  prev: readonly T[],
  next: readonly T[],
  hostsOf: (rule: T) => readonly string[],
): string[] | undefined {
  if (prev === next) return [];
  const before = byKey(prev);
  const after = byKey(next);
  if (!before || !after) return undefined; // two rules with one name: nothing to pair them by
  const out: string[] = [];
  for (const [key, rule] of before) {
    const now = after.get(key);
    if (sameResource(rule, now)) continue;
    out.push(...hostsOf(rule));
    if (now) out.push(...hostsOf(now));
  }
  for (const [key, rule] of after) if (!before.has(key)) out.push(...hostsOf(rule));
  // Among rules of equal standing the first in config order wins: those in both must keep their order.
  const kept = (from: ReadonlyMap<string, T>, other: ReadonlyMap<string, T>): string[] =>
    [...from.keys()].filter((k) => other.has(k));
  const a = kept(before, after);
  const b = kept(after, before);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return undefined;
  return out;
}

function byKey<T extends AnyResource>(rules: readonly T[]): Map<string, T> | undefined {
  const out = new Map<string, T>();
  for (const r of rules) out.set(`${r.namespace}/${r.name}`, r);
  return out.size === rules.length ? out : undefined;
}
