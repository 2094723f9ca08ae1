// The seam between the ADS server and what it serves: one generator per type URL and kind of proxy.
import type { Catalog } from '../../model/catalog.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { Proxy, ProxyKind } from '../proxy/proxy.js';
import type { EncodedResource } from '../proto/resource.js';

export interface GenerateContext {
  readonly proxy: Proxy;
  readonly catalog: Catalog;
  /** The traffic config (VirtualServices, DestinationRules, Gateways) of this serving generation. */
  readonly config: MeshConfig;
  /** The SPIFFE trust domain of workload identities (`--trust-domain`); default cluster.local. */
  readonly trustDomain?: string;
}

export interface ResourceGenerator {
  readonly typeUrl: string;
  readonly proxyKind: ProxyKind;
  /** What a wildcard subscription (LDS, CDS) resolves to for this proxy. */
  wildcardNames(ctx: GenerateContext): readonly string[];
  /** Builds one resource by name; undefined when no such resource exists for this proxy. */
  build(ctx: GenerateContext, name: string): EncodedResource | undefined;
  /**
   * The part of the proxy the resources depend on. Proxies with the same key share the encoded
   * resources; '' means they depend on the catalog alone.
   */
  viewKey(proxy: Proxy): string;
}
