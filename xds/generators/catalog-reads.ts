// Which hostnames a resource was built from, so that a change of services rebuilds the resources
// that read one of them rather than every resource in the cache (xds/server/resource-cache.ts).
// A serving view's catalog is a ReadTrackingCatalog: each lookup of a hostname is noted in the
// recording open at the time, a listing of the whole catalog marks the recording as reading
// everything. Its mesh index notes the hosts its VirtualService and DestinationRule lookups ask
// about the same way (noteHostLookup), so a change of one host's rules rebuilds what read them. A memoized value keeps the reads it was built from, and each later use of it notes
// them again (view-memo.ts), so a resource built from a shared value depends on what that value read.
import type { Catalog, CoLocatedEndpoint } from '../../model/catalog.js';
import type { PortEndpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';

export class CatalogReads {
  readonly hosts = new Set<string>();
  /**
   * The hostnames whose endpoints were read (some of `hosts`): an endpoints-only change of another
   * host leaves what was built the same (an EDS cluster names its load assignment; a DNS one embeds
   * an address).
   */
  readonly endpointHosts = new Set<string>();
  /** The catalog was listed (every service, or every endpoint at some IPs): any change may matter. */
  all = false;

  add(other: CatalogReads): void {
    if (other.all) this.all = true;
    for (const h of other.hosts) this.hosts.add(h);
    for (const h of other.endpointHosts) this.endpointHosts.add(h);
  }

  /** Whether an endpoints-only change of `hostnames` can change what was built from these reads. */
  readEndpointsOf(hostnames: Iterable<string>): boolean {
    if (this.all) return true;
    for (const h of hostnames) if (this.endpointHosts.has(h)) return true;
    return false;
  }
}

/** Recordings open now, innermost last (a memoized value built during a resource's build). */
const open: CatalogReads[] = [];

/** Runs `build`, recording the hostnames it reads through a ReadTrackingCatalog. */
export function recordingReads<T>(build: () => T): { readonly value: T; readonly reads: CatalogReads } {
  const reads = new CatalogReads();
  open.push(reads);
  try {
    return { value: build(), reads };
  } finally {
    open.pop();
  }
}

/** Notes `reads` (what a memoized value was built from) in the recording open now, if any. */
export function noteReads(reads: CatalogReads): void {
  open[open.length - 1]?.add(reads);
}

function noteHost(hostname: string): void {
  open[open.length - 1]?.hosts.add(hostname);
}

function noteEndpoints(hostname: string): void {
  const current = open[open.length - 1];
  current?.hosts.add(hostname);
  current?.endpointHosts.add(hostname);
}

/** The mesh index's observer: a rule lookup for `host` depends on that host's rules. */
export const noteHostLookup: (host: string) => void = noteHost;

function noteAll(): void {
  const current = open[open.length - 1];
  if (current) current.all = true;
}

/** A catalog that notes what is read from it; it reads from `inner`, unchanged. */
export class ReadTrackingCatalog implements Catalog {
  constructor(readonly inner: Catalog) {}

  services(): readonly Service[] {
    noteAll();
    return this.inner.services();
  }

  service(hostname: string): Service | undefined {
    noteHost(hostname);
    return this.inner.service(hostname);
  }

  endpoints(hostname: string, port: number): readonly PortEndpoint[] {
    noteEndpoints(hostname);
    return this.inner.endpoints(hostname, port);
  }

  endpointsByIp(ips: readonly string[]): readonly CoLocatedEndpoint[] {
    noteAll();
    return this.inner.endpointsByIp(ips);
  }
}

/** The catalog under a tracking one (the same catalog is one view's). */
export function untracked(catalog: Catalog): Catalog {
  return catalog instanceof ReadTrackingCatalog ? catalog.inner : catalog;
}
