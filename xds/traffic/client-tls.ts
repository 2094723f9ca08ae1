// Which client TLS settings apply to traffic for a service port (DestinationRule `trafficPolicy.tls`,
// overridden by `portLevelSettings[].tls`, and by a subset's own policy), and which SPIFFE identities
// the service's endpoints run as — what an ISTIO_MUTUAL client checks the server's certificate against.
import type { ClientTLSSettings, TrafficPolicy } from '../../mesh/types.js';
import type { Catalog } from '../../model/catalog.js';
import type { Service } from '../../model/service.js';
import type { GenerateContext } from '../generators/generator.js';
import { subsetOf } from '../../mesh/destination-rule-index.js';

export function clientTlsFor(
  ctx: Pick<GenerateContext, 'index' | 'proxy'>,
  service: Service,
  port: number,
  subset = '',
): ClientTLSSettings | undefined {
  const rule = ctx.index.destinationRules.lookup(service.hostname, ctx.proxy.namespace, service.namespace);
  const fromPolicy = (policy: TrafficPolicy | undefined): ClientTLSSettings | undefined =>
    policy?.portLevelSettings?.find((s) => s.port.number === port)?.tls ?? policy?.tls;
  return (
    (subset && fromPolicy(subsetOf(rule, subset)?.trafficPolicy)) || fromPolicy(rule?.spec.trafficPolicy)
  );
}

/** `spiffe://TD/ns/NS/sa/SA` of the endpoints serving the port, sorted; empty when none is known. */
export function serviceIdentities(
  catalog: Catalog,
  service: Service,
  port: number,
  trustDomain: string,
): string[] {
  const ids = new Set<string>();
  for (const pe of catalog.endpoints(service.hostname, port)) {
    const sa = pe.endpoint.serviceAccount;
    if (!sa) continue;
    ids.add(sa.startsWith('spiffe://') ? sa : `spiffe://${trustDomain}/ns/${service.namespace}/sa/${sa}`);
  }
  return [...ids].sort();
}
