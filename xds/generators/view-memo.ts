// Values derived from one serving view (a catalog and a mesh config) that many proxies share, such
// as the listener set of a sidecar view: built on first use and dropped with the view. A new
// catalog or config is a new view with an empty memo, so nothing kept here can be stale. A value
// keeps the catalog reads it was built from, and each use notes them for the resource being built
// (catalog-reads.ts).
import type { Catalog } from '../../model/catalog.js';
import {
  noteHostLookup,
  noteReads,
  ReadTrackingCatalog,
  recordingReads,
  untracked,
  type CatalogReads,
} from './catalog-reads.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import { MeshIndex } from '../../mesh/mesh-index.js';
import type { GenerateContext, ServingView } from './generator.js';
import type { Proxy } from '../proxy/proxy.js';

// The resource cache records what each build reads, and asks how far a config change reaches; it
// reaches the generators through this seam.
export { recordingReads, type CatalogReads } from './catalog-reads.js';
export { configChangeReach, type WholeKind } from './config-scope.js';

/** One kind of memoized value; the type parameter ties the slot to what it holds. */
export interface MemoSlot<T> {
  readonly name: string;
  /** Never set: carries T. */
  readonly value?: T;
}

export function memoSlot<T>(name: string): MemoSlot<T> {
  return { name };
}

interface Memoized {
  readonly value: unknown;
  readonly reads: CatalogReads;
}

export class ViewMemo {
  private readonly slots = new Map<MemoSlot<unknown>, Map<string, Memoized>>();

  /** The value of `slot` for `key`, built by `build` the first time. */
  get<T>(slot: MemoSlot<T>, key: string, build: () => T): T {
    let values = this.slots.get(slot);
    if (!values) this.slots.set(slot, (values = new Map<string, Memoized>()));
    let memoized = values.get(key);
    if (!memoized) values.set(key, (memoized = recordingReads(build)));
    noteReads(memoized.reads);
    return memoized.value as T;
  }
}

/**
 * The view of `catalog` and `config`. What `previous` derived is kept when it still applies: its
 * index when the config is the same, its memo when the catalog is too.
 */
export function servingView(
  source: { readonly catalog: Catalog; readonly config: MeshConfig; readonly trustDomain?: string },
  previous?: ServingView,
): ServingView {
  const sameConfig = previous?.config === source.config;
  const catalog = untracked(source.catalog);
  return {
    // Read through a tracking catalog: the resource cache learns which hostnames each resource read.
    catalog: new ReadTrackingCatalog(catalog),
    config: source.config,
    // Its rule lookups are recorded as reads of their host, as the catalog's are.
    index: sameConfig && previous ? previous.index : new MeshIndex(source.config, noteHostLookup),
    memo: sameConfig && previous && untracked(previous.catalog) === catalog ? previous.memo : new ViewMemo(),
    // Always present (maybe undefined): one object shape, which contexts copy field by field.
    trustDomain: source.trustDomain || undefined,
  };
}

/** A context on a view of its own (tests and one-off generation; the server shares one view). */
export function generateContext(source: {
  readonly proxy: Proxy;
  readonly catalog: Catalog;
  readonly config: MeshConfig;
  readonly trustDomain?: string;
}): GenerateContext {
  return { ...servingView(source), proxy: source.proxy };
}
