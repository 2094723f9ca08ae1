// The lookups generation makes into one mesh config, built once per config generation and passed
// to the generators with it (GenerateContext.index): VirtualServices by gateway and host,
// DestinationRules by namespace and host, Sidecars by namespace and workload selector (with the
// scope each view of a proxy gets), AuthorizationPolicies and RequestAuthentications by namespace
// and workload selector (root-namespace ones mesh-wide). Each kind's index is built from its list
// alone, so it is kept for as long as the list is: a config step that leaves a kind's list as it was
// hands the next config that very list (config-change.ts), and an edit of one DestinationRule
// touches the DestinationRule index only, derived from the previous one (destination-rule-index.ts).
// What a build looks up is recorded by the xDS side, which wraps the index per build
// (xds/generators/recording-context.ts), not here.
import type { MeshConfig } from './mesh-config.js';
import type {
  AuthorizationPolicyResource,
  RequestAuthenticationResource,
  SidecarResource,
  VirtualServiceResource,
} from './types.js';
import { AuthorizationIndex } from './authorization-index.js';
import { destinationRuleIndex, type DestinationRuleIndex } from './destination-rule-index.js';
import { SidecarIndex } from './sidecar-index.js';
import { VirtualServiceIndex } from './virtual-service-index.js';

export class MeshIndex {
  readonly virtualServices: VirtualServiceIndex;
  readonly destinationRules: DestinationRuleIndex;
  readonly sidecars: SidecarIndex;
  readonly authorization: AuthorizationIndex;

  constructor(readonly config: MeshConfig) {
    const { virtualServices, destinationRules, sidecars } = config;
    this.virtualServices = perList(VS, virtualServices, () => new VirtualServiceIndex(virtualServices));
    this.destinationRules = destinationRuleIndex(destinationRules);
    this.sidecars = perList(SIDECARS, sidecars, () => new SidecarIndex(sidecars));
    const { authorizationPolicies: policies, requestAuthentications: jwt } = config;
    const byJwt = perList(
      AUTHZ,
      policies,
      () => new WeakMap<readonly RequestAuthenticationResource[], AuthorizationIndex>(),
    );
    this.authorization = perList(byJwt, jwt, () => new AuthorizationIndex(policies, jwt));
  }
}

/** Each kind's index, by the list it was built from (dropped with the list). */
const VS = new WeakMap<readonly VirtualServiceResource[], VirtualServiceIndex>();
const SIDECARS = new WeakMap<readonly SidecarResource[], SidecarIndex>();
/** By both lists: policies, then RequestAuthentications. */
const AUTHZ = new WeakMap<
  readonly AuthorizationPolicyResource[],
  WeakMap<readonly RequestAuthenticationResource[], AuthorizationIndex>
>();

function perList<K extends readonly unknown[], V>(memo: WeakMap<K, V>, list: K, build: () => V): V {
  let value = memo.get(list);
  if (value === undefined) memo.set(list, (value = build()));
  return value;
}
