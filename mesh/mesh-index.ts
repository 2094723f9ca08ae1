// The lookups generation makes into one mesh config, built once per config generation and passed
// to the generators with it (GenerateContext.index): VirtualServices by gateway and host,
// DestinationRules by namespace and host, Sidecars by namespace and workload selector (with the
// scope each view of a proxy gets), AuthorizationPolicies and RequestAuthentications by namespace
// and workload selector (root-namespace ones mesh-wide). Nothing here outlives its config: a new config, a new index.
// What a build looks up is recorded by the xDS side, which wraps the index per build
// (xds/generators/recording-context.ts), not here.
import type { MeshConfig } from './mesh-config.js';
import { AuthorizationIndex } from './authorization-index.js';
import { DestinationRuleIndex } from './destination-rule-index.js';
import { SidecarIndex } from './sidecar-index.js';
import { VirtualServiceIndex } from './virtual-service-index.js';

export class MeshIndex {
  readonly virtualServices: VirtualServiceIndex;
  readonly destinationRules: DestinationRuleIndex;
  readonly sidecars: SidecarIndex;
  readonly authorization: AuthorizationIndex;

  constructor(readonly config: MeshConfig) {
    this.virtualServices = new VirtualServiceIndex(config.virtualServices);
    this.destinationRules = new DestinationRuleIndex(config.destinationRules);
    this.sidecars = new SidecarIndex(config.sidecars);
    this.authorization = new AuthorizationIndex(config.authorizationPolicies, config.requestAuthentications);
  }
}
