// The JSON served at GET /debug/configz: what each file contributed or why it did not.
import type { ConfigConflict, MergedConfig } from './merge.js';
import type { CrossResourceWarning } from './service-entry.js';
import type {
  ConfigIssue,
  DestinationRuleResource,
  ServiceEntryResource,
  VirtualServiceResource,
  WorkloadEntryResource,
} from './types.js';

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
  readonly resources: {
    readonly serviceEntries: readonly ServiceEntryResource[];
    readonly workloadEntries: readonly WorkloadEntryResource[];
    readonly virtualServices: readonly VirtualServiceResource[];
    readonly destinationRules: readonly DestinationRuleResource[];
  };
}

export function resourcesOf(merged: MergedConfig): ConfigDebugState['resources'] {
  return {
    serviceEntries: merged.serviceEntries,
    workloadEntries: merged.workloadEntries,
    virtualServices: merged.virtualServices,
    destinationRules: merged.destinationRules,
  };
}
