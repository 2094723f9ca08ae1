// What a push applies to the resource cache: its merged event, with the mesh config's change in it
// as far as that reaches. (Transitional: the cache still takes hostnames and a config scope, and a
// config change is still measured here between configs, `everything` included; the change event's
// keys are mapped onto them until the cache reads the keys themselves.)
import type { MeshConfig } from '../../mesh/mesh-config.js';
import { changedHosts, configChanged, endpointsOnly, type ChangeEvent } from '../../model/change.js';
import { configChangeReach, type WholeKind } from '../generators/view-memo.js';

/** `all`: the config changed in ways that may reach anything; `hosts`: only the rules of `hostnames`. */
export type ConfigScope = 'all' | 'hosts';

/** A push's event as the cache applies it. */
export interface NarrowedChange {
  readonly hostnames: ReadonlySet<string>;
  readonly endpointsOnly: boolean;
  readonly config?: ConfigScope;
  /** Kinds read wholesale (Sidecars, AuthorizationPolicies, ...) that changed; absent or empty: none. */
  readonly kinds?: ReadonlySet<WholeKind>;
}

/** How far a narrowed change's config change reaches; one naming nothing may reach anything. */
export function configScope(change: NarrowedChange): ConfigScope | undefined {
  return change.config ?? (change.hostnames.size === 0 ? 'all' : undefined);
}

/**
 * The push's event with the config's change in it, as far as that reaches (configChangeReach): the
 * hosts whose rules changed, added to the registries' hosts, and the kinds read wholesale that
 * changed; or everything. Measured between the config the cache was last applied with and the one
 * taking over, whatever the event says: a push for a registry may pick up a config whose own event
 * comes later (that event then finds nothing left to do), and a config event whose config is the
 * cache's already reaches nothing by itself.
 */
export function narrowChange(event: ChangeEvent, prev: MeshConfig, next: MeshConfig): NarrowedChange {
  const hostnames = changedHosts(event);
  const config = configChanged(event);
  if (prev === next) {
    return config
      ? { hostnames, endpointsOnly: false, config: 'hosts' }
      : { hostnames, endpointsOnly: endpointsOnly(event) };
  }
  const reach = configChangeReach(prev, next);
  if (!reach) return { hostnames, endpointsOnly: false, config: 'all' };
  return {
    hostnames: new Set([...hostnames, ...reach.hosts]),
    endpointsOnly: false,
    config: 'hosts',
    ...(reach.kinds.size > 0 && { kinds: reach.kinds }),
  };
}
