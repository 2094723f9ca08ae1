// A route naming a subset no DestinationRule defines is a cross-resource warning only: the rule may
// be in another file, or arrive later (Istio: an analyzer warning, IST0101), and until then the
// subset's cluster has no endpoints.
import type { DestinationRuleResource, VirtualServiceResource } from '../../mesh/types.js';
import type { ResourceRef } from '../merge.js';

export interface UnknownSubsetWarning {
  readonly resource: ResourceRef;
  readonly message: string;
}

/** The `host|subset` keys a DestinationRule defines (its host resolved in its namespace). */
export function definedSubsetKeys(
  dr: DestinationRuleResource,
  resolveHost: (host: string, namespace: string) => string,
): string[] {
  const host = resolveHost(dr.spec.host, dr.namespace);
  return (dr.spec.subsets ?? []).map((s) => `${host}|${s.name}`);
}

/**
 * A VirtualService's destinations that name a subset: each one's `host|subset` key, and the
 * warnings of those `defined` does not hold, in route order.
 */
export function subsetWarningsOf(
  vs: VirtualServiceResource,
  defined: (key: string) => boolean,
  resolveHost: (host: string, namespace: string) => string,
): { readonly keys: readonly string[]; readonly warnings: UnknownSubsetWarning[] } {
  const keys: string[] = [];
  const warnings: UnknownSubsetWarning[] = [];
  const resource = { resource: `VirtualService/${vs.namespace}/${vs.name}`, file: vs.file, line: vs.line };
  const check = (d: { host: string; subset?: string } | undefined, where: string): void => {
    if (d?.subset === undefined) return;
    const host = resolveHost(d.host, vs.namespace);
    const key = `${host}|${d.subset}`;
    keys.push(key);
    if (!defined(key))
      warnings.push({
        resource,
        message: `${where}.subset: no DestinationRule for ${host} defines subset "${d.subset}"; its cluster has no endpoints until one does`,
      });
  };
  (vs.spec.http ?? []).forEach((r, i) => {
    (r.route ?? []).forEach((d, j) => check(d.destination, `spec.http[${i}].route[${j}].destination`));
    if (r.mirror) check(r.mirror, `spec.http[${i}].mirror`);
  });
  (vs.spec.tcp ?? []).forEach((r, i) =>
    r.route.forEach((d, j) => check(d.destination, `spec.tcp[${i}].route[${j}].destination`)),
  );
  (vs.spec.tls ?? []).forEach((r, i) =>
    r.route.forEach((d, j) => check(d.destination, `spec.tls[${i}].route[${j}].destination`)),
  );
  return { keys, warnings };
}

/**
 * Destinations naming a subset that no DestinationRule for that host defines (in any namespace).
 * A warning, not an error: see the top of this file. Kept from edit to edit by
 * config-dir/subset-warnings.ts.
 */
export function unknownSubsetWarnings(
  virtualServices: readonly VirtualServiceResource[],
  destinationRules: readonly DestinationRuleResource[],
  resolveHost: (host: string, namespace: string) => string,
): UnknownSubsetWarning[] {
  const defined = new Set<string>();
  for (const dr of destinationRules) for (const key of definedSubsetKeys(dr, resolveHost)) defined.add(key);
  const isDefined = (key: string): boolean => defined.has(key);
  return virtualServices.flatMap((vs) => subsetWarningsOf(vs, isDefined, resolveHost).warnings);
}
