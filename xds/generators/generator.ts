// The seam between the ADS server and what it serves: one generator per type URL and kind of proxy,
// looked up in a table the server is given.
import type { Catalog } from '../../model/catalog.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { MeshIndex } from '../../mesh/mesh-index.js';
import type { Proxy, ProxyKind } from '../proxy/proxy.js';
import type { EncodedResource } from '../proto/resource.js';
import type { ViewMemo } from './view-memo.js';
import type { WholeKind } from './config-scope.js';

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
}

export interface GenerateContext extends ServingView {
  readonly proxy: Proxy;
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
   * The mesh config reaches these resources only through the index's VirtualService and
   * DestinationRule lookups (recorded per host) and through what configChangeReach compares as a
   * whole (config-scope.ts). Then a config change rebuilds only those that looked up a host whose
   * rules changed, or that read a kind read wholesale that changed (`wholeKinds`); without it, every
   * one of them is rebuilt on any config change.
   */
  readonly configByHost?: boolean;
  /**
   * With configByHost: the kinds read wholesale (config-scope.ts WHOLE_KINDS) the resource `name`
   * depends on; a change of any other leaves it as it is. Absent: every such kind. The cache
   * differential test holds each generator to what it says here.
   */
  wholeKinds?(name: string): readonly WholeKind[];
}

/** Which generator serves a type URL to a kind of proxy (xds/generators/index.ts has the table). */
export interface GeneratorLookup {
  find(kind: ProxyKind, typeUrl: string): ResourceGenerator | undefined;
}
