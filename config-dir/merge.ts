// The in-force files → one set of resources. Files are taken in path order and documents in file
// order, so "first wins" is stable and independent of the order events arrived in.
import type { FileLoad } from './load-file.js';
import {
  resourceKey,
  type AnyConfigResource,
  type AuthorizationPolicyResource,
  type DestinationRuleResource,
  type GatewayResource,
  type PeerAuthenticationResource,
  type RequestAuthenticationResource,
  type ServiceEntryResource,
  type SidecarResource,
  type VirtualServiceResource,
  type WorkloadEntryResource,
  type WorkloadGroupResource,
} from '../mesh/types.js';

export interface ResourceRef {
  readonly resource: string;
  readonly file: string;
  readonly line: number;
}

/** Two definitions of one thing: the first is served, the other is ignored until the first goes away. */
export interface ConfigConflict {
  readonly type: 'duplicate-resource' | 'duplicate-host';
  /** The resource key or the hostname both claim. */
  readonly subject: string;
  readonly kept: ResourceRef;
  readonly ignored: ResourceRef;
}

export interface MergedConfig {
  readonly serviceEntries: readonly ServiceEntryResource[];
  readonly workloadEntries: readonly WorkloadEntryResource[];
  readonly virtualServices: readonly VirtualServiceResource[];
  readonly destinationRules: readonly DestinationRuleResource[];
  readonly gateways: readonly GatewayResource[];
  readonly sidecars: readonly SidecarResource[];
  readonly peerAuthentications: readonly PeerAuthenticationResource[];
  readonly authorizationPolicies: readonly AuthorizationPolicyResource[];
  readonly requestAuthentications: readonly RequestAuthenticationResource[];
  readonly workloadGroups: readonly WorkloadGroupResource[];
  readonly conflicts: readonly ConfigConflict[];
}

export function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function refOf(r: AnyConfigResource): ResourceRef {
  return { resource: resourceKey(r), file: r.file, line: r.line };
}

export function mergeFiles(files: Iterable<FileLoad>): MergedConfig {
  const ordered = [...files].sort((a, b) => comparePaths(a.path, b.path));
  const byKey = new Map<string, AnyConfigResource>();
  const conflicts: ConfigConflict[] = [];
  for (const file of ordered) {
    for (const resource of file.resources) {
      const key = resourceKey(resource);
      const first = byKey.get(key);
      if (first)
        conflicts.push({
          type: 'duplicate-resource',
          subject: key,
          kept: refOf(first),
          ignored: refOf(resource),
        });
      else byKey.set(key, resource);
    }
  }
  const all = [...byKey.values()];
  return {
    serviceEntries: all.filter((r): r is ServiceEntryResource => r.kind === 'ServiceEntry'),
    workloadEntries: all.filter((r): r is WorkloadEntryResource => r.kind === 'WorkloadEntry'),
    ...meshConfigLists(all),
    conflicts,
  };
}

/** The kinds MeshConfig holds (meshConfigLists' lists): files defining only these serve no service or endpoint. */
export const MESH_CONFIG_KINDS: ReadonlySet<string> = new Set([
  'VirtualService',
  'DestinationRule',
  'Gateway',
  'Sidecar',
  'PeerAuthentication',
  'AuthorizationPolicy',
  'RequestAuthentication',
  'WorkloadGroup',
]);

/** The traffic config's lists of `resources` (MergedConfig's mesh part), each in the given order. */
export type MeshConfigLists = Omit<MergedConfig, 'serviceEntries' | 'workloadEntries' | 'conflicts'>;

export function meshConfigLists(resources: readonly AnyConfigResource[]): MeshConfigLists {
  return {
    virtualServices: resources.filter((r): r is VirtualServiceResource => r.kind === 'VirtualService'),
    destinationRules: resources.filter((r): r is DestinationRuleResource => r.kind === 'DestinationRule'),
    gateways: resources.filter((r): r is GatewayResource => r.kind === 'Gateway'),
    sidecars: resources.filter((r): r is SidecarResource => r.kind === 'Sidecar'),
    peerAuthentications: resources.filter(
      (r): r is PeerAuthenticationResource => r.kind === 'PeerAuthentication',
    ),
    authorizationPolicies: resources.filter(
      (r): r is AuthorizationPolicyResource => r.kind === 'AuthorizationPolicy',
    ),
    requestAuthentications: resources.filter(
      (r): r is RequestAuthenticationResource => r.kind === 'RequestAuthentication',
    ),
    workloadGroups: resources.filter((r): r is WorkloadGroupResource => r.kind === 'WorkloadGroup'),
  };
}
