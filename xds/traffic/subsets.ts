// A DestinationRule subset as endpoints: those whose labels include every label of the subset.
import type { Catalog } from '../../model/catalog.js';
import type { PortEndpoint } from '../../model/endpoint.js';
import type { MeshIndex } from '../../mesh/mesh-index.js';
import type { Subset } from '../../mesh/types.js';
import { subsetOf } from '../../mesh/destination-rule-index.js';

/** The subset `name` of `host` as seen from `proxyNamespace`; undefined when no rule defines it. */
export function findSubset(
  index: MeshIndex,
  catalog: Catalog,
  host: string,
  name: string,
  proxyNamespace: string,
): Subset | undefined {
  const rule = index.destinationRules.lookup(host, proxyNamespace, catalog.service(host)?.namespace);
  return subsetOf(rule, name);
}

export function subsetEndpoints(endpoints: readonly PortEndpoint[], subset: Subset): PortEndpoint[] {
  const wanted = Object.entries(subset.labels ?? {});
  return endpoints.filter((pe) => wanted.every(([k, v]) => pe.endpoint.labels[k] === v));
}
