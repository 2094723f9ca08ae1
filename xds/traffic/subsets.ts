// A DestinationRule subset as endpoints: those whose labels include every label of the subset.
import type { Catalog } from '../../model/catalog.js';
import type { PortEndpoint } from '../../model/endpoint.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { Subset } from '../../mesh/types.js';
import { destinationRuleFor, subsetOf } from './destination-rules.js';

/** The subset `name` of `host` as seen from `proxyNamespace`; undefined when no rule defines it. */
export function findSubset(
  config: MeshConfig,
  catalog: Catalog,
  host: string,
  name: string,
  proxyNamespace: string,
): Subset | undefined {
  const rule = destinationRuleFor(config, host, proxyNamespace, catalog.service(host)?.namespace);
  return subsetOf(rule, name);
}

export function subsetEndpoints(endpoints: readonly PortEndpoint[], subset: Subset): PortEndpoint[] {
  const wanted = Object.entries(subset.labels ?? {});
  return endpoints.filter((pe) => wanted.every(([k, v]) => pe.endpoint.labels[k] === v));
}
