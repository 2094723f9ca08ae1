// The ten config kinds the config directory serves, in one table: every list of them (the merged
// config's lists, the mesh config's, the empty ones, which kinds are traffic config, the kind
// names a change event carries) is derived from it. The order is the table's: lists come out
// ServiceEntries first, as /debug/configz has always shown them.
import type {
  AnyConfigResource,
  AuthorizationPolicyResource,
  DestinationRuleResource,
  GatewayResource,
  PeerAuthenticationResource,
  RequestAuthenticationResource,
  ServiceEntryResource,
  SidecarResource,
  VirtualServiceResource,
  WorkloadEntryResource,
  WorkloadGroupResource,
} from './types.js';

/**
 * The table: each kind, the list its resources go in, whether it is traffic config (the mesh
 * config's) rather than services and endpoints, and its Istio API group.
 */
const KINDS = [
  { kind: 'ServiceEntry', list: 'serviceEntries', traffic: false, group: 'networking' },
  { kind: 'WorkloadEntry', list: 'workloadEntries', traffic: false, group: 'networking' },
  { kind: 'VirtualService', list: 'virtualServices', traffic: true, group: 'networking' },
  { kind: 'DestinationRule', list: 'destinationRules', traffic: true, group: 'networking' },
  { kind: 'Gateway', list: 'gateways', traffic: true, group: 'networking' },
  { kind: 'Sidecar', list: 'sidecars', traffic: true, group: 'networking' },
  { kind: 'PeerAuthentication', list: 'peerAuthentications', traffic: true, group: 'security' },
  { kind: 'AuthorizationPolicy', list: 'authorizationPolicies', traffic: true, group: 'security' },
  { kind: 'RequestAuthentication', list: 'requestAuthentications', traffic: true, group: 'security' },
  { kind: 'WorkloadGroup', list: 'workloadGroups', traffic: true, group: 'networking' },
] as const satisfies readonly {
  kind: string;
  list: keyof KindLists;
  traffic: boolean;
  group: 'networking' | 'security';
}[];

type KindRow = (typeof KINDS)[number];

/** The table lists every list of KindLists (a list added there and not here fails to compile). */
const TABLE_COMPLETE: [Exclude<keyof KindLists, KindRow['list']>] extends [never] ? true : never = true;
void TABLE_COMPLETE;

/** The kinds Portolan serves, as `kind:` spells them. */
export type ConfigKind = KindRow['kind'];

/** Each kind's Istio API group: networking.istio.io or security.istio.io. */
export type ApiGroup = KindRow['group'];

/** Each kind's list (the name its resources are listed under, and a change event names it by). */
export interface KindLists {
  readonly serviceEntries: readonly ServiceEntryResource[];
  readonly workloadEntries: readonly WorkloadEntryResource[];
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
  /** The groups VMs register into through `portolan agent --group` (auto-registration). */
  readonly workloadGroups: readonly WorkloadGroupResource[];
}

export type KindList = keyof KindLists;

/** The kinds that are traffic config (the mesh config's), not services or endpoints. */
export type MeshKindList = Extract<KindRow, { traffic: true }>['list'];

/** The traffic config's lists. */
export type MeshConfigLists = Pick<KindLists, MeshKindList>;

/** Every kind, in table order. */
export const CONFIG_KINDS: readonly ConfigKind[] = KINDS.map((r) => r.kind);

/** Every kind's list, in table order. */
export const KIND_LISTS: readonly KindList[] = KINDS.map((r) => r.list);

const MESH_ROWS = KINDS.filter((r): r is Extract<KindRow, { traffic: true }> => r.traffic);

/** The traffic config's lists, in table order. */
export const MESH_KIND_LISTS: readonly MeshKindList[] = MESH_ROWS.map((r) => r.list);

/** The kinds MeshConfig holds: files defining only these serve no service or endpoint. */
export const MESH_CONFIG_KINDS: ReadonlySet<string> = new Set(MESH_ROWS.map((r) => r.kind));

const LIST_OF: ReadonlyMap<string, KindList> = new Map(KINDS.map((r) => [r.kind, r.list]));
const GROUP_OF: ReadonlyMap<ConfigKind, ApiGroup> = new Map(KINDS.map((r) => [r.kind, r.group]));

const MESH_LIST_OF: ReadonlyMap<string, MeshKindList> = new Map(MESH_ROWS.map((r) => [r.kind, r.list]));

/** The traffic config list a kind's resources go in; undefined for services and endpoints. */
export function meshListOf(kind: string): MeshKindList | undefined {
  return MESH_LIST_OF.get(kind);
}

/** The API group a kind is read from. */
export function apiGroupOf(kind: ConfigKind): ApiGroup {
  return GROUP_OF.get(kind) ?? 'networking';
}

/** `resources` by kind, each list in the given order. */
export function kindLists(resources: readonly AnyConfigResource[]): KindLists {
  const out: Record<KindList, AnyConfigResource[]> = emptyLists();
  for (const r of resources) {
    const list = LIST_OF.get(r.kind);
    if (list) out[list].push(r);
  }
  // Each list holds only its kind (filled by LIST_OF, the table).
  return out as unknown as KindLists;
}

/** The traffic config's lists of `resources`, each in the given order. */
export function meshConfigLists(resources: readonly AnyConfigResource[]): MeshConfigLists {
  return pickMeshLists(kindLists(resources));
}

/** The traffic config's lists of a config holding every kind's. */
export function pickMeshLists(lists: MeshConfigLists): MeshConfigLists {
  const out: Partial<Record<MeshKindList, unknown>> = {};
  for (const list of MESH_KIND_LISTS) out[list] = lists[list];
  return out as MeshConfigLists;
}

/** Every list empty. */
export const EMPTY_KIND_LISTS: KindLists = Object.freeze(emptyLists() as unknown as KindLists);

function emptyLists(): Record<KindList, AnyConfigResource[]> {
  const out: Partial<Record<KindList, AnyConfigResource[]>> = {};
  for (const list of KIND_LISTS) out[list] = [];
  return out as Record<KindList, AnyConfigResource[]>;
}
