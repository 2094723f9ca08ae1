// Which ServiceEntries select which WorkloadEntries, kept between full publishes so that an edit of
// WorkloadEntry files (incremental.ts) recomputes only the ServiceEntries selecting what changed:
// those of the entries' namespace whose selector matches an entry's labels before or after.
// Built by every full publish from what it served; only WorkloadEntry edits change it afterwards
// (a selecting ServiceEntry is never edited host by host: such edits take the full publish).
import { resourceKey, type ServiceEntryResource, type WorkloadEntryResource } from '../mesh/types.js';
import { matches } from './conversion.js';
import type { WorkloadEntryEdit } from './incremental.js';

export interface SelectionChange {
  /** The ServiceEntries to convert again, in precedence order. */
  readonly serviceEntries: readonly ServiceEntryResource[];
  /** The WorkloadEntries of their namespaces after the edit. */
  readonly workloadEntries: readonly WorkloadEntryResource[];
  /** Makes the edit the index's state (once the caller has published it). */
  commit(): void;
}

export class SelectionIndex {
  /** namespace → ServiceEntries that select by label (no inline endpoints), in precedence order. */
  private readonly selectors = new Map<string, ServiceEntryResource[]>();
  /** namespace → key → the WorkloadEntry in force (the files' own, then outside ones). */
  private readonly entries = new Map<string, Map<string, WorkloadEntryResource>>();
  /** Keys of WorkloadEntries from outside the directory (a file's entry of that name shadows one). */
  private readonly outside: ReadonlySet<string>;

  constructor(
    serviceEntries: readonly ServiceEntryResource[],
    workloadEntries: readonly WorkloadEntryResource[],
    outsideKeys: Iterable<string>,
  ) {
    for (const se of serviceEntries) {
      if (se.spec.endpoints || !se.spec.workloadSelector?.labels) continue;
      const list = this.selectors.get(se.namespace) ?? [];
      list.push(se);
      this.selectors.set(se.namespace, list);
    }
    for (const we of workloadEntries) this.namespace(we.namespace).set(resourceKey(we), we);
    this.outside = new Set(outsideKeys);
  }

  /** What `edit` changes, or undefined when it touches an outside entry's name (full publish). */
  change(edit: WorkloadEntryEdit): SelectionChange | undefined {
    const touched = [...edit.removed, ...edit.added];
    if (touched.some((we) => this.outside.has(resourceKey(we)))) return undefined;
    const namespaces = new Set(touched.map((we) => we.namespace));
    const next = new Map<string, Map<string, WorkloadEntryResource>>();
    for (const ns of namespaces) next.set(ns, new Map(this.entries.get(ns)));
    for (const we of edit.removed) next.get(we.namespace)?.delete(resourceKey(we));
    for (const we of edit.added) next.get(we.namespace)?.set(resourceKey(we), we);
    const serviceEntries: ServiceEntryResource[] = [];
    const workloadEntries: WorkloadEntryResource[] = [];
    for (const ns of namespaces) {
      const mine = touched.filter((we) => we.namespace === ns);
      for (const se of this.selectors.get(ns) ?? []) {
        const selector = se.spec.workloadSelector?.labels ?? {};
        if (mine.some((we) => matches(selector, we.spec.labels ?? {}))) serviceEntries.push(se);
      }
      workloadEntries.push(...(next.get(ns)?.values() ?? []));
    }
    return {
      serviceEntries,
      workloadEntries,
      commit: () => {
        for (const [ns, map] of next) {
          if (map.size > 0) this.entries.set(ns, map);
          else this.entries.delete(ns);
        }
      },
    };
  }

  private namespace(ns: string): Map<string, WorkloadEntryResource> {
    const map = this.entries.get(ns) ?? new Map<string, WorkloadEntryResource>();
    this.entries.set(ns, map);
    return map;
  }
}
