// What an Envoy subscribed the usual way holds for one view: LDS and CDS wildcard, then the RDS
// names its listeners use and the EDS names its clusters use. The consistency check runs over it.
import type { GenerateContext, GeneratorLookup, ResourceGenerator } from '../generators/generator.js';
import { decodeAny } from '../proto/protos.js';
import type { EncodedResource } from '../proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';

export function envoyResourceSet(
  generators: GeneratorLookup,
  ctx: GenerateContext,
): Map<string, EncodedResource[]> {
  const generator = (typeUrl: string): ResourceGenerator => {
    const g = generators.find('envoy', typeUrl);
    if (!g) throw new Error(`no Envoy generator for ${typeUrl}`);
    return g;
  };
  const build = (typeUrl: string, names: Iterable<string>): EncodedResource[] =>
    [...names].flatMap((n) => generator(typeUrl).build(ctx, n) ?? []);
  const listeners = build(LISTENER, generator(LISTENER).wildcardNames(ctx));
  const clusters = build(CLUSTER, generator(CLUSTER).wildcardNames(ctx));
  const routeNames = new Set<string>();
  for (const l of listeners) collectStrings(decodeAny(l.typeUrl, l.value), 'route_config_name', routeNames);
  const endpointNames = clusters
    .map((c) => decodeAny(c.typeUrl, c.value))
    .filter((c) => c.type === 'EDS')
    .map((c) =>
      String((c.eds_cluster_config as { service_name?: string } | undefined)?.service_name || c.name),
    );
  return new Map([
    [LISTENER, listeners],
    [CLUSTER, clusters],
    [ROUTE, build(ROUTE, routeNames)],
    [ENDPOINT, build(ENDPOINT, endpointNames)],
  ]);
}

function collectStrings(value: unknown, key: string, out: Set<string>): void {
  if (Array.isArray(value)) for (const v of value) collectStrings(v, key, out);
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      if (k === key && typeof v === 'string') out.add(v);
      else collectStrings(v, key, out);
    }
}
