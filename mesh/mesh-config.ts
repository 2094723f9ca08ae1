// The traffic config the xDS generators read besides the service catalog: one frozen value per
// change of the config directory's traffic config kinds (mesh/config-kinds.ts). Its generation
// tells caches that something changed without comparing the contents; what changed, by key, is in
// the config directory's change event (mesh/config-change.ts).
import { EMPTY_KIND_LISTS, pickMeshLists, type MeshConfigLists } from './config-kinds.js';

export { nextMeshConfig } from './config-change.js';

/** The traffic config's lists (mesh/config-kinds.ts), with the generation that moves when they change. */
export interface MeshConfig extends Omit<MeshConfigLists, 'workloadGroups'> {
  readonly generation: number;
  /** The groups VMs register into through `portolan agent --group` (auto-registration); absent: none. */
  readonly workloadGroups?: MeshConfigLists['workloadGroups'];
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
  ...pickMeshLists(EMPTY_KIND_LISTS),
});

/**
 * Where the ADS server reads the mesh config. Its changes arrive as change events of the registry
 * that holds it (the config directory names the rules and kinds an edit changed, model/change.ts).
 */
export interface MeshConfigSource {
  meshConfig(): MeshConfig;
}

/** The source for a plane without a config directory: no traffic config, ever. */
export const NO_MESH_CONFIG: MeshConfigSource = {
  meshConfig: () => EMPTY_MESH_CONFIG,
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
  };
}
