// The JSON served at GET /debug/configz: what each file contributed or why it did not.
import type { ConfigConflict, MergedConfig } from './merge.js';
import type { CrossResourceWarning } from './conversion.js';
import type { ConfigFileView } from '../model/admin-api.js';

/** One file's state, as /debug/configz shows it (one definition: model/admin-api.ts). */
export type FileDebugState = ConfigFileView;

export interface ConfigDebugState {
  readonly dir: string;
  readonly synced: boolean;
  readonly files: readonly FileDebugState[];
  readonly conflicts: readonly ConfigConflict[];
  readonly warnings: readonly CrossResourceWarning[];
  /** Every resource kind in force, as validated. */
  readonly resources: Omit<MergedConfig, 'conflicts'>;
}

export function resourcesOf(merged: MergedConfig): ConfigDebugState['resources'] {
  const { conflicts, ...resources } = merged;
  return resources;
}
