// The services the proxyless gRPC generator tests use (test/unit/xds/generators.test.ts), and the
// endpoints the golden files give them: a single-port and a multi-port service, DNS and NONE
// resolution, endpoints in two localities with labels, weights and service accounts.
import { buildCatalog, type Catalog } from '../../model/catalog.js';
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';
import { endpoint, service, servicePort } from './model-fixtures.js';

export const ONE = 'one.test'; // single port 7070
export const TWO = 'two.test'; // ports 7070 and 8080
export const DNS = 'dns.test';
export const NONE = 'none.test';

export const grpcFixtureServices: readonly Service[] = [
  service(ONE, [servicePort('grpc', 7070)]),
  service(TWO, [servicePort('grpc', 7070), servicePort('http', 8080, 'HTTP')]),
  service(DNS, [servicePort('grpc', 443)], { resolution: 'DNS' }),
  service(NONE, [servicePort('grpc', 9090)], { resolution: 'NONE' }),
];

export function grpcFixtureCatalog(): Catalog {
  const zone = (zone: string) => ({ region: 'r1', zone, subzone: '' });
  const endpoints: Record<string, Endpoint[]> = {
    [ONE]: [
      endpoint(
        '10.0.0.1',
        { grpc: 7070 },
        { locality: zone('z1'), labels: { version: 'v1' }, serviceAccount: 'one' },
      ),
      endpoint(
        '10.0.0.2',
        { grpc: 7070 },
        { locality: zone('z2'), labels: { version: 'v2' }, weight: 3, serviceAccount: 'one-canary' },
      ),
      endpoint(
        '10.0.0.3',
        { grpc: 7070 },
        { locality: zone('z2'), health: 'UNHEALTHY', serviceAccount: 'one' },
      ),
    ],
    [TWO]: [endpoint('10.0.0.4', { grpc: 7070, http: 8080 }, { serviceAccount: 'two' })],
    [DNS]: [endpoint('a.example.com', { grpc: 8443 }), endpoint('b.example.com', { grpc: 8443 })],
    [NONE]: [endpoint('10.0.0.9', { grpc: 9090 })],
  };
  return buildCatalog(grpcFixtureServices, new Map(Object.entries(endpoints)));
}
