// GET /debug/configz: the config directory's own state (files, errors, conflicts, resources) with
// what the xDS renderers cannot give each kind of client of the config in force.
import type { ConfigDebugState } from '../config-dir/debug-state.js';
import type { MeshConfig } from '../mesh/mesh-config.js';
import type { ConfigzView } from '../model/admin-api.js';
import { trafficLimitations } from '../xds/traffic/limitations.js';
import { nackMarks, type NackOriginSource } from './nack-marks.js';

export type { ConfigzView } from '../model/admin-api.js';

export function configz(state: ConfigDebugState, config: MeshConfig, ads: NackOriginSource): ConfigzView {
  const { resources, ...rest } = state;
  return { ...rest, limitations: trafficLimitations(config), resources, nacks: nackMarks(state, ads) };
}
