// The `kubernetes` registry: Services and EndpointSlices of one or more clusters, as one registry.
//
// Several clusters merge the way Istio's multi-cluster does, and the way the aggregate merges
// registries: the same `SVC.NS.svc.DOMAIN` in two clusters is one Service whose definition (ports,
// resolution, labels) comes from the first cluster in `--kubeconfig` order that has it, with the
// virtual IPs of all of them, and the endpoints of all of them, each mapped onto the owner's ports
// by port number (an endpoint serving none of them is dropped). Every endpoint carries its cluster
// in the `topology.istio.io/cluster` label.
//
// The registry publishes once every cluster has listed every kind; until then it is not synced, so
// no client is handed a mesh missing a cluster. Afterwards a cluster whose API server fails keeps
// its last good objects, and the registry is marked stale until it answers again.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../log/logger.js';
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';
import { StateBackedRegistry } from '../registry-state.js';
import { ClusterWatch, type ClusterDebug } from './cluster-watch.js';
import type { ConvertedService } from './conversion.js';
import { DEFAULT_TIMING, type WatchTiming } from './list-watcher.js';
import { remapEndpointPorts } from '../../model/port-mapping.js';
import { LayeredMap } from '../../model/layered-map.js';

export interface KubeCluster {
  /** Unique among the clusters; shown in /debug/registryz and on every endpoint. */
  readonly id: string;
  readonly config: KubeConfig;
}

export interface KubernetesRegistryOptions {
  /** In merge order: the first cluster that has a hostname owns its Service. */
  readonly clusters: readonly KubeCluster[];
  /** The cluster DNS domain: hostnames are `SVC.NS.svc.DOMAIN`. */
  readonly domain: string;
  readonly logger: Logger;
  readonly timing?: Partial<WatchTiming>;
}

export class KubernetesRegistry extends StateBackedRegistry {
  readonly name = 'kubernetes';
  private readonly clusters: ClusterWatch[];
  private readonly services = new Map<string, Service>();
  private readonly endpoints = new Map<string, readonly Endpoint[]>();
  /** Hostnames merged since the last published snapshot (a round can merge without publishing). */
  private readonly unpublished = new Set<string>();
  private scheduled: NodeJS.Immediate | undefined;
  private stopped = false;
  /** Whether the state currently carries a failure (to clear it on recovery). */
  private reportedFailure = false;
  /** Whether a snapshot read from the clusters has been published (a restored one does not count). */
  private liveSynced = false;

  constructor(private readonly options: KubernetesRegistryOptions) {
    super();
    if (options.clusters.length === 0) throw new Error('the kubernetes registry needs at least one cluster');
    const timing = { ...DEFAULT_TIMING, ...options.timing };
    this.clusters = options.clusters.map(
      (c) =>
        new ClusterWatch({
          clusterId: c.id,
          config: c.config,
          domain: options.domain,
          registry: this.name,
          timing,
          logger: options.logger,
          onUpdate: () => this.schedule(),
        }),
    );
  }

  async start(): Promise<void> {
    await Promise.all(this.clusters.map((c) => c.start()));
    this.publish();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    await Promise.all(this.clusters.map((c) => c.stop()));
  }

  debug(): { domain: string; clusters: ClusterDebug[] } {
    return { domain: this.options.domain, clusters: this.clusters.map((c) => c.debug()) };
  }

  /** Watch events arrive in bursts (a list, a chunk of events): publish once per burst. */
  private schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = setImmediate(() => {
      this.scheduled = undefined;
      this.publish();
    });
  }

  private publish(): void {
    if (this.stopped) return;
    const changed = new Set<string>();
    for (const cluster of this.clusters) for (const host of cluster.flush()) changed.add(host);
    for (const host of changed) {
      this.merge(host);
      this.unpublished.add(host);
    }
    const failing = this.clusters
      .map((c) => ({ id: c.clusterId, failure: c.failing() }))
      .find((c) => c.failure !== undefined);
    const firstLive = !this.liveSynced;
    const recovered = !failing && this.reportedFailure;
    // Publish when something changed, at the first live sync (which replaces a restored snapshot even
    // when the clusters' objects were flushed by earlier, partial rounds), or to clear a recovered
    // failure; a failure alone republishes nothing, so the last good snapshot (and its lastSyncAt)
    // stays as it was.
    if (this.clusters.every((c) => c.hasSynced()) && (changed.size > 0 || firstLive || recovered)) {
      // After the first live sync, the next snapshot is the last one with the hostnames merged since
      // (layered: it copies only those) and the diff looks at those alone.
      const hosts = [...this.unpublished];
      const last = this.state.snapshot();
      this.state.replace(
        firstLive
          ? { services: new Map(this.services), endpoints: new Map(this.endpoints) }
          : {
              services: LayeredMap.of(last.services).with(hosts.map((h) => [h, this.services.get(h)])),
              endpoints: LayeredMap.of(last.endpoints).with(hosts.map((h) => [h, this.endpoints.get(h)])),
            },
        failing?.failure && new Error(`cluster ${failing.id}: ${failing.failure.message}`),
        undefined,
        firstLive ? undefined : hosts,
      );
      this.unpublished.clear();
      this.liveSynced = true;
      if (firstLive) this.options.logger.info({ services: this.services.size }, 'kubernetes registry synced');
      else if (recovered) this.options.logger.info('kubernetes registry recovered');
    }
    if (failing?.failure) this.state.fail(new Error(`cluster ${failing.id}: ${failing.failure.message}`));
    // state.replace clears a failure only while all clusters are synced; until then it stays reported.
    this.reportedFailure = failing !== undefined || (this.reportedFailure && !this.liveSynced);
  }

  /** Recomputes one hostname from every cluster's conversion (see the merge rule above). */
  private merge(host: string): void {
    const parts = this.clusters.map((c) => c.service(host)).filter((p): p is ConvertedService => !!p);
    const [owner, ...others] = parts;
    if (!owner) {
      this.services.delete(host);
      this.endpoints.delete(host);
      return;
    }
    if (others.length === 0) {
      this.services.set(host, owner.service);
      this.endpoints.set(host, owner.endpoints);
      return;
    }
    const addresses = [...new Set(parts.flatMap((p) => p.service.addresses))];
    this.services.set(host, { ...owner.service, addresses });
    this.endpoints.set(host, [
      ...owner.endpoints,
      ...others.flatMap((p) => remapEndpointPorts(p.endpoints, p.service, owner.service)),
    ]);
  }
}
