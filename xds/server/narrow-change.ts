// What a push applies to the resource cache: its merged event, with the mesh config's change in it
// as far as that reaches.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { ChangeEvent } from '../../model/change.js';
import { configChangeReach, type WholeKind } from '../generators/view-memo.js';

/** A push's event, narrowed: with `config: 'hosts'`, also the kinds read wholesale that changed. */
export interface NarrowedChange extends ChangeEvent {
  /** Kinds read wholesale (Sidecars, AuthorizationPolicies, ...) that changed; absent or empty: none. */
  readonly kinds?: ReadonlySet<WholeKind>;
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
  // An event naming nothing without saying it is a config change asks for everything (tests, tools).
  const explicit = event.config !== undefined || event.hostnames.size > 0;
  if (prev === next) return event.config === 'all' ? { ...event, config: 'hosts' } : event;
  const reach = configChangeReach(prev, next);
  if (!reach || !explicit) return { ...event, endpointsOnly: false, config: 'all' };
  return {
    ...event,
    hostnames: new Set([...event.hostnames, ...reach.hosts]),
    endpointsOnly: false,
    config: 'hosts',
    ...(reach.kinds.size > 0 && { kinds: reach.kinds }),
  };
}
