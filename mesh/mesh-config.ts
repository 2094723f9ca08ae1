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
  /**
   * How Envoy normalizes request paths before routing and authorization (Istio's
   * `meshConfig.pathNormalization`); absent: DEFAULT_PATH_NORMALIZATION. A serve-wide setting
   * (`--path-normalization`), set by withMeshSettings, not by the config directory.
   */
  readonly pathNormalization?: PathNormalization;
}

/**
 * Istio's `meshConfig.pathNormalization` levels. NONE: the path as received. BASE: RFC 3986
 * (`.`/`..` resolved, unreserved `%HH` decoded, `\` to `/`). MERGE_SLASHES: BASE, then `//` to
 * `/`. DECODE_AND_MERGE_SLASHES: `%2F`/`%5C` decoded first, then MERGE_SLASHES.
 */
export const PATH_NORMALIZATION_LEVELS = [
  'NONE',
  'BASE',
  'MERGE_SLASHES',
  'DECODE_AND_MERGE_SLASHES',
] as const;
export type PathNormalization = (typeof PATH_NORMALIZATION_LEVELS)[number];

/**
 * Istio's default is BASE; Portolan's is MERGE_SLASHES, since under BASE `//admin` still passes a
 * DENY on `/admin*` (CVE-2021-31920, which Istio documents and leaves to the operator).
 */
export const DEFAULT_PATH_NORMALIZATION: PathNormalization = 'MERGE_SLASHES';

/** Serve-wide settings that ride on every mesh config a source gives. */
export interface MeshSettings {
  readonly pathNormalization?: PathNormalization;
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
 * `source`, with `settings` on each of its configs. The same config comes back as the same object
 * (caches compare by identity), and the generation is the source's.
 */
export function withMeshSettings(source: MeshConfigSource, settings: MeshSettings): MeshConfigSource {
  if (settings.pathNormalization === undefined) return source;
  const seen = new WeakMap<MeshConfig, MeshConfig>();
  return {
    meshConfig() {
      const inner = source.meshConfig();
      let out = seen.get(inner);
      if (!out) seen.set(inner, (out = Object.freeze({ ...inner, ...settings })));
      return out;
    },
    onConfigChange: (listener) => source.onConfigChange(listener),
  };
}

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
