// WorkloadEntries that come from outside the config directory — the VMs that registered themselves
// through their agent (registration/) — handed to the config registry, which selects them by label
// into ServiceEntries exactly like the directory's own.
import type { WorkloadEntryResource } from './types.js';

export interface WorkloadEntrySource {
  workloadEntries(): readonly WorkloadEntryResource[];
  /** Fires after `workloadEntries()` changed. */
  onWorkloadEntriesChange(listener: () => void): () => void;
}
