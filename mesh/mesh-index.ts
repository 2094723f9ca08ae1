// The lookups generation makes into one mesh config, built once per config generation and passed
// to the generators with it (GenerateContext.index): VirtualServices by gateway and host,
// DestinationRules by namespace and host, Sidecars by namespace and workload selector (with the
// scope each view of a proxy gets), AuthorizationPolicies and RequestAuthentications by namespace
// and workload selector (root-namespace ones mesh-wide). Nothing here outlives its config: a new config, a new index.
// Whoever builds it may watch which hosts the VirtualService and DestinationRule lookups ask about
// (`onHostLookup`): the xDS resource cache uses that to rebuild, when a rule of some host changes,
// only what was built from that host's rules.
import type { MeshConfig } from './mesh-config.js';
import { AuthorizationIndex } from './authorization-index.js';
import { DestinationRuleIndex } from './destination-rule-index.js';
import { SidecarIndex } from './sidecar-index.js';
import { VirtualServiceIndex } from './virtual-service-index.js';

/** Told the host of every VirtualService and DestinationRule lookup, as it is made. */
export type HostLookupObserver = (host: string) => void;

export class MeshIndex {
  readonly virtualServices: VirtualServiceIndex;
  readonly destinationRules: DestinationRuleIndex;
  readonly sidecars: SidecarIndex;
  readonly authorization: AuthorizationIndex;

  constructor(
    readonly config: MeshConfig,
    onHostLookup?: HostLookupObserver,
  ) {
    this.virtualServices = new VirtualServiceIndex(config.virtualServices, onHostLookup);
    this.destinationRules = new DestinationRuleIndex(config.destinationRules, onHostLookup);
    this.sidecars = new SidecarIndex(config.sidecars);
    this.authorization = new AuthorizationIndex(config.authorizationPolicies, config.requestAuthentications);
  }
}
