// GET /debug/configz: the config directory's own state (files, errors, conflicts, resources) with
// what the xDS renderers cannot give each kind of client of the config in force.
import type { ConfigDebugState } from '../config-dir/debug-state.js';
import type { MeshConfig } from '../mesh/mesh-config.js';
import { trafficLimitations, type TrafficLimitation } from '../xds/traffic/limitations.js';

export interface ConfigzView extends ConfigDebugState {
  readonly limitations: readonly TrafficLimitation[];
}

export function configz(state: ConfigDebugState, config: MeshConfig): ConfigzView {
  const { resources, ...rest } = state;
  return { ...rest, limitations: trafficLimitations(config), resources };
}
