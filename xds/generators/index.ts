// The table of contents: which generator serves which type URL for which kind of proxy.
import type { Logger } from '../../log/logger.js';
import type { GeneratorLookup, ResourceGenerator } from './generator.js';
import type { ProxyKind } from '../proxy/proxy.js';
import { grpcClusterGenerator } from './grpc/cluster.js';
import { grpcEndpointGenerator } from './grpc/endpoint.js';
import { grpcListenerGenerator } from './grpc/listener.js';
import { grpcRouteGenerator } from './grpc/route.js';
import { envoyGenerators } from './envoy/generators.js';
import { nameTableGenerator } from './agent/name-table.js';
import { registrationGenerator } from './agent/registration.js';
import { validatingGenerator } from '../validate/validating-generator.js';
import type { WithheldPushes } from '../validate/withheld.js';
import { withholdingGenerator } from '../validate/withholding-generator.js';

export const DEFAULT_GENERATORS: readonly ResourceGenerator[] = [
  grpcClusterGenerator,
  grpcEndpointGenerator,
  grpcListenerGenerator,
  grpcRouteGenerator,
  ...envoyGenerators(),
  // `portolan agent`'s own stream identifies as a proxyless client; an Envoy node may ask too.
  registrationGenerator('grpc'),
  registrationGenerator('envoy'),
  nameTableGenerator('grpc'),
  nameTableGenerator('envoy'),
];

export class GeneratorTable implements GeneratorLookup {
  // By kind, then type URL: a lookup per stream and type hashes the (usually interned) type URL
  // rather than a new "kind type" string.
  private readonly table = new Map<ProxyKind, Map<string, ResourceGenerator>>();

  /**
   * With `validate` (cli/ sets it from PORTOLAN_VALIDATE_PUSHES), every resource is checked against
   * Envoy's validation rules before it is served, and withheld (logged to `logger`) if it fails.
   * With `withheld` (what `portolan serve` serves), a resource the proxy's client would reject
   * (xds/validate/acceptance.ts) is not sent: the client keeps its last good one, and the push is
   * recorded there. Without it (`portolan diff`'s candidates), the generators are the raw ones.
   */
  constructor(
    generators: readonly ResourceGenerator[] = DEFAULT_GENERATORS,
    validate = false,
    logger?: Logger,
    withheld?: WithheldPushes,
  ) {
    for (const g of generators) {
      let byType = this.table.get(g.proxyKind);
      if (!byType) this.table.set(g.proxyKind, (byType = new Map<string, ResourceGenerator>()));
      const accepted = withheld
        ? withholdingGenerator(g, withheld, logger?.child({ component: 'client-acceptance' }))
        : g;
      byType.set(g.typeUrl, validate ? validatingGenerator(accepted, logger) : accepted);
    }
  }

  find(kind: ProxyKind, typeUrl: string): ResourceGenerator | undefined {
    return this.table.get(kind)?.get(typeUrl);
  }
}
