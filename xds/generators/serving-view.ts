// A serving view (a catalog and a mesh config, with what derives from them) and the contexts
// generation reads it through: the server's shared, unrecorded one per proxy, and a recording one
// per build (recording-context.ts).
import type { Catalog } from '../../model/catalog.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import { MeshIndex } from '../../mesh/mesh-index.js';
import type { Proxy } from '../proxy/proxy.js';
import { configHasFaults } from '../traffic/route-context.js';
import type { GenerateContext, ServingView } from './generator.js';
import { ReadSet } from './reads.js';
import { recordingContext } from './recording-context.js';
import { ViewMemo } from './view-memo.js';

/**
 * The view of `catalog` and `config`. What `previous` derived is kept when it still applies: its
 * index when the config is the same, its memo when the catalog is too.
 */
export function servingView(
  source: { readonly catalog: Catalog; readonly config: MeshConfig; readonly trustDomain?: string },
  previous?: ServingView,
): ServingView {
  const sameConfig = previous?.config === source.config;
  const keep = sameConfig ? previous : undefined;
  return {
    catalog: source.catalog,
    config: source.config,
    index: keep ? keep.index : new MeshIndex(source.config),
    memo: keep && keep.catalog === source.catalog ? keep.memo : new ViewMemo(),
    // Always present (maybe undefined): one object shape, which contexts copy field by field.
    trustDomain: source.trustDomain || undefined,
    faults: keep ? keep.faults : faultsOf(source.config),
  };
}

/** Whether routes inject faults, by the VirtualServices list (a step that kept the list keeps it). */
const faultsByList = new WeakMap<MeshConfig['virtualServices'], boolean>();

function faultsOf(config: MeshConfig): boolean {
  let faults = faultsByList.get(config.virtualServices);
  if (faults === undefined) faultsByList.set(config.virtualServices, (faults = configHasFaults(config)));
  return faults;
}

/** The server's context of `proxy` in `view`: it records nothing (builds are given one that does). */
export function proxyContext(view: ServingView, proxy: Proxy): GenerateContext {
  // Field by field: a spread copy of the view cost more than the rest of a build.
  const { catalog, config, index, memo, trustDomain, faults } = view;
  return { catalog, config, index, memo, trustDomain, faults, proxy };
}

/** A build of `ctx`, recording what it reads into a ReadSet of its own. */
export function recordedBuild<T>(
  ctx: GenerateContext,
  build: (ctx: GenerateContext) => T,
): { readonly value: T; readonly reads: ReadSet } {
  const reads = new ReadSet();
  return { value: build(recordingContext(ctx, reads)), reads };
}

/** A context on a view of its own (tests and one-off generation; the server shares one view). */
export function generateContext(source: {
  readonly proxy: Proxy;
  readonly catalog: Catalog;
  readonly config: MeshConfig;
  readonly trustDomain?: string;
}): GenerateContext {
  return proxyContext(servingView(source), source.proxy);
}
