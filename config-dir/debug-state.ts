// The JSON served at GET /debug/configz: what each file contributed or why it did not.
import type { ConfigConflict, MergedConfig } from './merge.js';
import type { CrossResourceWarning } from './conversion.js';
import type { ConfigIssue } from './issue.js';

export interface FileDebugState {
  readonly path: string;
  /** When the version now in force was loaded; null if the file never loaded cleanly. */
  readonly loadedAt: string | null;
  /** When the file was last read, successfully or not. */
  readonly checkedAt: string;
  /** 'error' means the last read failed and the previous good version (if any) is still served. */
  readonly status: 'ok' | 'error';
  readonly errors: readonly ConfigIssue[];
  readonly warnings: readonly ConfigIssue[];
  /** `Kind/namespace/name` of every resource the in-force version defines. */
  readonly resources: readonly string[];
}

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
