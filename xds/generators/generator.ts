// The seam between the ADS server and what it serves: one generator per type URL and kind of proxy,
// looked up in a table the server is given, and what the server needs to run them: a serving view,
// a context per proxy, and builds that record what they read. The server sees generation only
// through this file (and names.ts; tools/eslint-layers.mjs SEAMS).
import type { Catalog } from '../../model/catalog.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { MeshIndex } from '../../mesh/mesh-index.js';
import type { Proxy, ProxyKind } from '../proxy/proxy.js';
import type { EncodedResource } from '../proto/resource.js';
import type { ViewMemo } from './view-memo.js';
import type { ReadSet } from './reads.js';

export { servingView, proxyContext, recordedBuild } from './serving-view.js';
export type { ReadSet, ConfigKind } from './reads.js';

/** What one serving generation generates from: the catalog and mesh config, and what derives from them. */
export interface ServingView {
  readonly catalog: Catalog;
  /** The traffic config (VirtualServices, DestinationRules, Gateways) of this serving generation. */
  readonly config: MeshConfig;
  /** Lookups into `config`, built once per config. */
  readonly index: MeshIndex;
  /** Values many proxies of this view share (a sidecar view's listeners), built on first use. */
  readonly memo: ViewMemo;
  /** The SPIFFE trust domain of workload identities (`--trust-domain`); default cluster.local. */
  readonly trustDomain?: string;
  /**
   * Whether any VirtualService route injects faults (proxyless listeners add the fault filter then).
   * Read without a record: a config change that flips it is a change of everything (model/change.ts).
   */
  readonly faults: boolean;
}

export interface GenerateContext extends ServingView {
  readonly proxy: Proxy;
  /**
   * What this build reads, noted by its catalog, config and index (recording-context.ts); absent on
   * a context that records nothing (the server's per-proxy one, a test's).
   */
  readonly reads?: ReadSet;
}

export interface ResourceGenerator {
  readonly typeUrl: string;
  readonly proxyKind: ProxyKind;
  /** What a wildcard subscription (LDS, CDS) resolves to for this proxy. */
  wildcardNames(ctx: GenerateContext): readonly string[];
  /** Builds one resource by name; undefined when no such resource exists for this proxy. */
  build(ctx: GenerateContext, name: string): EncodedResource | undefined;
  /**
   * The part of the proxy the resources depend on, in `view` (what the serving view's config makes
   * matter: EDS reads the proxy's locality only when a rule looks at it). Proxies with the same key
   * share the encoded resources; '' means they depend on the catalog alone. The key may change
   * only with the view's config (the resource cache re-keys its streams then); without `view`, it
   * covers every config.
   */
  viewKey(proxy: Proxy, view?: ServingView): string;
  /**
   * What of the view viewKey reads (an immutable value, equal answers the same object). Only a
   * generator that has this is passed the view, and the resource cache recomputes its open
   * streams' keys only when this changes; other keys are fixed per proxy.
   */
  viewKeyReads?(view: ServingView): unknown;
  /**
   * The hostname the resource `name` belongs to, if one: a name that builds to nothing may appear
   * when a change names its host (a cluster when its service comes, a subset cluster when its
   * DestinationRule defines the subset). Absent: no name belongs to one host.
   */
  hostOf?(name: string): string | undefined;
}

/**
 * `inner` with its build replaced by `build` (given inner's): every other member is inner's, by
 * prototype, so a wrapper cannot drop one.
 */
export function withBuild(
  inner: ResourceGenerator,
  build: (ctx: GenerateContext, name: string, inner: ResourceGenerator) => EncodedResource | undefined,
): ResourceGenerator {
  const wrapped = Object.create(inner) as ResourceGenerator;
  Object.defineProperty(wrapped, 'build', {
    value: (ctx: GenerateContext, name: string) => build(ctx, name, inner),
  });
  return wrapped;
}

/** Which generator serves a type URL to a kind of proxy (xds/generators/index.ts has the table). */
export interface GeneratorLookup {
  find(kind: ProxyKind, typeUrl: string): ResourceGenerator | undefined;
}
