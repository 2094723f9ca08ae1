// The traffic config the xDS generators read besides the service catalog: one frozen value per
// change of the config directory's VirtualServices, DestinationRules, Gateways, Sidecars,
// PeerAuthentications, AuthorizationPolicies, RequestAuthentications and WorkloadGroups. Its
// generation tells caches that something changed without comparing the contents.
import type { ChangeTrigger } from '../model/change.js';
import type {
  AuthorizationPolicyResource,
  DestinationRuleResource,
  GatewayResource,
  SidecarResource,
  PeerAuthenticationResource,
  RequestAuthenticationResource,
  VirtualServiceResource,
  WorkloadGroupResource,
} from './types.js';

export interface MeshConfig {
  readonly generation: number;
  readonly virtualServices: readonly VirtualServiceResource[];
  readonly destinationRules: readonly DestinationRuleResource[];
  readonly gateways: readonly GatewayResource[];
  /** Sidecar scoping: which services each Envoy proxy is sent (mesh/sidecar-index.ts). */
  readonly sidecars: readonly SidecarResource[];
  /** Inbound mTLS modes (xds/traffic/peer-authentication.ts). */
  readonly peerAuthentications: readonly PeerAuthenticationResource[];
  /** Who may call each workload (xds/traffic/authz-rbac.ts). */
  readonly authorizationPolicies: readonly AuthorizationPolicyResource[];
  /** Which JWTs requests to each workload may carry (xds/traffic/jwt-authn.ts). */
  readonly requestAuthentications: readonly RequestAuthenticationResource[];
  /** The groups VMs register into through `portolan agent --group` (auto-registration); absent: none. */
  readonly workloadGroups?: readonly WorkloadGroupResource[];
}

export const EMPTY_MESH_CONFIG: MeshConfig = Object.freeze({
  generation: 0,
  virtualServices: [],
  destinationRules: [],
  gateways: [],
  sidecars: [],
  peerAuthentications: [],
  authorizationPolicies: [],
  requestAuthentications: [],
  workloadGroups: [],
});

/** Where the ADS server reads the mesh config, and learns that it changed (and, if known, why). */
export interface MeshConfigSource {
  meshConfig(): MeshConfig;
  onConfigChange(listener: (trigger?: ChangeTrigger) => void): () => void;
}

/** The source for a plane without a config directory: no traffic config, ever. */
export const NO_MESH_CONFIG: MeshConfigSource = {
  meshConfig: () => EMPTY_MESH_CONFIG,
  onConfigChange: () => () => undefined,
};

/**
 * The mesh config of a merge. The generation moves only when the content does: a resource that
 * merely moved (another line or file) keeps it, so nothing is pushed, yet its new place is shown.
 */
export function nextMeshConfig(previous: MeshConfig, merged: Omit<MeshConfig, 'generation'>): MeshConfig {
  const next = {
    virtualServices: merged.virtualServices,
    destinationRules: merged.destinationRules,
    gateways: merged.gateways,
    sidecars: merged.sidecars,
    peerAuthentications: merged.peerAuthentications,
    authorizationPolicies: merged.authorizationPolicies,
    requestAuthentications: merged.requestAuthentications,
    workloadGroups: merged.workloadGroups,
  };
  const changed = contentKey(next) !== contentKey(previous);
  return Object.freeze({ generation: previous.generation + (changed ? 1 : 0), ...next });
}

// Compared without file/line, so moving a resource within or between files is no change.
function contentKey(config: Omit<MeshConfig, 'generation'>): string {
  return JSON.stringify(
    [
      config.virtualServices,
      config.destinationRules,
      config.gateways,
      config.sidecars,
      config.peerAuthentications,
      config.authorizationPolicies,
      config.requestAuthentications,
      config.workloadGroups ?? [],
    ].map((list) =>
      list.map((r) => [r.kind, r.apiVersion, r.namespace, r.name, r.labels, r.annotations, r.spec]),
    ),
  );
}
