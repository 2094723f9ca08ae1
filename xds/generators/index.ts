// The table of contents: which generator serves which type URL for which kind of proxy.
import type { ResourceGenerator } from './generator.js';
import type { ProxyKind } from '../proxy/proxy.js';
import { grpcClusterGenerator } from './grpc/cluster.js';
import { grpcEndpointGenerator } from './grpc/endpoint.js';
import { grpcListenerGenerator } from './grpc/listener.js';
import { grpcRouteGenerator } from './grpc/route.js';
import { envoyGenerators } from './envoy/generators.js';
import { validatePushesEnabled, validatingGenerator } from '../validate/validating-generator.js';

export const DEFAULT_GENERATORS: readonly ResourceGenerator[] = [
  grpcClusterGenerator,
  grpcEndpointGenerator,
  grpcListenerGenerator,
  grpcRouteGenerator,
  ...envoyGenerators(),
];

export class GeneratorTable {
  private readonly table = new Map<string, ResourceGenerator>();

  constructor(
    generators: readonly ResourceGenerator[] = DEFAULT_GENERATORS,
    validate: boolean = validatePushesEnabled(),
  ) {
    for (const g of generators)
      this.table.set(`${g.proxyKind} ${g.typeUrl}`, validate ? validatingGenerator(g) : g);
  }

  find(kind: ProxyKind, typeUrl: string): ResourceGenerator | undefined {
    return this.table.get(`${kind} ${typeUrl}`);
  }
}
