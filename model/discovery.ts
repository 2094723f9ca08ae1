// The one interface downstream code (xDS generators, admin) reads services through.
import type { Catalog } from './catalog.js';
import type { ChangeEvent } from './change.js';

export interface ServiceDiscovery extends Catalog {
  /** The current merged view, frozen: hold it for the length of a push. */
  catalog(): Catalog;
  /** True once every source has completed its first sync. */
  hasSynced(): boolean;
  onChange(listener: (event: ChangeEvent) => void): () => void;
}
