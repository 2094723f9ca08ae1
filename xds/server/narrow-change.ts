// What a push applies to the resource cache: its merged event, with the mesh config's change in it
// as far as that reaches.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { ChangeEvent } from '../../model/change.js';
import { configChangeHosts } from '../generators/view-memo.js';

/**
 * The push's event with the config's change in it, as far as that reaches (configChangeHosts): the
 * hosts whose rules changed, added to the registries' hosts, or everything. Measured between the
 * config the cache was last applied with and the one taking over, whatever the event says: a push
 * for a registry may pick up a config whose own event comes later (that event then finds nothing
 * left to do), and a config event whose config is the cache's already reaches nothing by itself.
 */
export function narrowChange(event: ChangeEvent, prev: MeshConfig, next: MeshConfig): ChangeEvent {
  // An event naming nothing without saying it is a config change asks for everything (tests, tools).
  const explicit = event.config !== undefined || event.hostnames.size > 0;
  if (prev === next) return event.config === 'all' ? { ...event, config: 'hosts' } : event;
  const hosts = configChangeHosts(prev, next);
  if (!hosts || !explicit) return { ...event, endpointsOnly: false, config: 'all' };
  return {
    ...event,
    hostnames: new Set([...event.hostnames, ...hosts]),
    endpointsOnly: false,
    config: 'hosts',
  };
}
