// One cluster: list + watch of Services, EndpointSlices, Nodes and Pods, and the Portolan Services
// converted from them, recomputed only for what an event touched. An EndpointSlice change reconverts
// its Service; a Node or Pod change reconverts the Services whose endpoints were built from it.
//
// Pods are watched for one thing, the service account of an endpoint's `targetRef` pod (and its
// labels, which Istio uses as endpoint labels). Nodes give the region (and a zone when the
// EndpointSlice has none). Both are optional: an API server that refuses them (RBAC) leaves those
// fields empty rather than stopping the registry.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../log/logger.js';
import { convertService, serviceHostname, type ClusterLookup, type ConvertedService } from './conversion.js';
import { KubeHttp } from './client.js';
import {
  objectKey,
  parseEndpointSlice,
  parseNode,
  parsePod,
  parseService,
  type KubeEndpointSlice,
  type KubeNode,
  type KubePod,
  type KubeService,
} from './api.js';
import { ListWatcher, type ListWatcherDebug, type StoreChange, type WatchTiming } from './list-watcher.js';
import { RecoveryProbe } from '../recovery-probe.js';

export interface ClusterWatchOptions {
  readonly clusterId: string;
  readonly config: KubeConfig;
  readonly domain: string;
  /** The registry name put on converted Services. */
  readonly registry: string;
  readonly timing: WatchTiming;
  readonly logger: Logger;
  /** Called when anything changed (objects, sync, failure); the registry coalesces and publishes. */
  readonly onUpdate: () => void;
  /** While watches back off, how often the API server is probed for its return (default 1 s). */
  readonly probeIntervalMs?: number;
}

const PROBE_TIMEOUT_MS = 2000;

export interface ClusterDebug {
  readonly clusterId: string;
  readonly server: string;
  readonly synced: boolean;
  readonly services: number;
  readonly endpoints: number;
  readonly watches: Readonly<Record<string, ListWatcherDebug>>;
}

export class ClusterWatch implements ClusterLookup {
  readonly clusterId: string;
  readonly domain: string;
  private readonly http: KubeHttp;
  private readonly recovery: RecoveryProbe;
  private readonly services: ListWatcher<KubeService>;
  private readonly slices: ListWatcher<KubeEndpointSlice>;
  private readonly nodes: ListWatcher<KubeNode>;
  private readonly pods: ListWatcher<KubePod>;
  /** EndpointSlices by owning Service (`namespace/service`), then by slice key. */
  private readonly slicesByService = new Map<string, Map<string, KubeEndpointSlice>>();
  /** Converted Services by hostname. */
  private readonly converted = new Map<string, ConvertedService>();
  /** Which Services (keys) were built from each node and pod, to reconvert them when it changes. */
  private readonly nodeUsers = new Map<string, Set<string>>();
  private readonly podUsers = new Map<string, Set<string>>();
  /** Service keys to reconvert on the next flush. */
  private readonly dirty = new Set<string>();

  constructor(private readonly options: ClusterWatchOptions) {
    this.clusterId = options.clusterId;
    this.domain = options.domain;
    this.http = new KubeHttp(options.config);
    const logger = options.logger.child({ cluster: options.clusterId });
    // While any watcher backs off, GET /version (cheap, allowed to every client) tells when the API
    // server answers again: all of them then retry at once (recovery-probe.ts).
    const http = this.http;
    this.recovery = new RecoveryProbe(async (signal) => {
      await http.getJson('/version', {}, PROBE_TIMEOUT_MS, signal);
    }, options.probeIntervalMs);
    const common = {
      http: this.http,
      timing: options.timing,
      onHealth: options.onUpdate,
      recovery: this.recovery,
    };
    const watcher = <T>(
      kind: string,
      path: string,
      parse: (raw: unknown) => T,
      onChange: (changes: readonly StoreChange<T>[]) => void,
      optional = false,
    ): ListWatcher<T> =>
      new ListWatcher<T>({
        ...common,
        kind,
        path,
        parse,
        optional,
        logger,
        onChange: (changes) => {
          onChange(changes);
          options.onUpdate();
        },
      });
    this.services = watcher('services', '/api/v1/services', parseService, (changes) => {
      for (const c of changes) this.dirty.add(c.key);
    });
    this.slices = watcher(
      'endpointslices',
      '/apis/discovery.k8s.io/v1/endpointslices',
      parseEndpointSlice,
      (changes) => this.indexSlices(changes),
    );
    this.nodes = watcher('nodes', '/api/v1/nodes', parseNode, (c) => this.touch(this.nodeUsers, c), true);
    this.pods = watcher('pods', '/api/v1/pods', parsePod, (c) => this.touch(this.podUsers, c), true);
  }

  private get watchers(): readonly ListWatcher<unknown>[] {
    return [this.services, this.slices, this.nodes, this.pods] as readonly ListWatcher<unknown>[];
  }

  /** Starts every watch; resolves when each has listed once or failed trying (and keeps retrying). */
  async start(): Promise<void> {
    await Promise.all(this.watchers.map((w) => w.start()));
  }

  async stop(): Promise<void> {
    this.recovery.stop();
    await Promise.all(this.watchers.map((w) => w.stop()));
  }

  hasSynced(): boolean {
    return this.watchers.every((w) => w.hasSynced());
  }

  /** The first failing watch's error, if any watch is failing now. */
  failing(): { message: string; at: string } | undefined {
    for (const w of this.watchers) {
      const f = w.failing();
      if (f) return f;
    }
    return undefined;
  }

  /** Reconverts what changed since the last flush; returns the hostnames whose conversion changed. */
  flush(): Set<string> {
    const hosts = new Set<string>();
    for (const key of this.dirty) {
      const [namespace = '', name = ''] = key.split('/');
      const host = serviceHostname(namespace, name, this.domain);
      const old = this.converted.get(host);
      if (old) this.forget(key, old);
      const svc = this.services.objects().get(key);
      if (svc) {
        const next = convertService(svc, this, this.options.registry);
        for (const node of next.nodes) users(this.nodeUsers, node).add(key);
        for (const pod of next.pods) users(this.podUsers, pod).add(key);
        this.converted.set(host, next);
        hosts.add(host);
      } else if (old) {
        this.converted.delete(host);
        hosts.add(host);
      }
    }
    this.dirty.clear();
    return hosts;
  }

  /** This cluster's conversion of a hostname, as of the last flush. */
  service(hostname: string): ConvertedService | undefined {
    return this.converted.get(hostname);
  }

  hostnames(): IterableIterator<string> {
    return this.converted.keys();
  }

  // ClusterLookup, for conversion.

  slicesOf(namespace: string, serviceName: string): readonly KubeEndpointSlice[] {
    return [...(this.slicesByService.get(`${namespace}/${serviceName}`)?.values() ?? [])];
  }

  node(name: string): KubeNode | undefined {
    return this.nodes.objects().get(name);
  }

  pod(namespace: string, name: string): KubePod | undefined {
    return this.pods.objects().get(objectKey({ namespace, name }));
  }

  debug(): ClusterDebug {
    let endpoints = 0;
    for (const c of this.converted.values()) endpoints += c.endpoints.length;
    return {
      clusterId: this.clusterId,
      server: this.http.server,
      synced: this.hasSynced(),
      services: this.converted.size,
      endpoints,
      watches: Object.fromEntries(this.watchers.map((w) => [w.kind, w.debug()])),
    };
  }

  private indexSlices(changes: readonly StoreChange<KubeEndpointSlice>[]): void {
    for (const { key, before, after } of changes) {
      if (before && before.serviceName) {
        const owner = `${before.namespace}/${before.serviceName}`;
        this.slicesByService.get(owner)?.delete(key);
        if (this.slicesByService.get(owner)?.size === 0) this.slicesByService.delete(owner);
        this.dirty.add(owner);
      }
      // A slice without the service-name label belongs to no Service.
      if (after && after.serviceName) {
        const owner = `${after.namespace}/${after.serviceName}`;
        let bucket = this.slicesByService.get(owner);
        if (!bucket) this.slicesByService.set(owner, (bucket = new Map<string, KubeEndpointSlice>()));
        bucket.set(key, after);
        this.dirty.add(owner);
      }
    }
  }

  private touch(index: Map<string, Set<string>>, changes: readonly StoreChange<unknown>[]): void {
    for (const { key } of changes) for (const service of index.get(key) ?? []) this.dirty.add(service);
  }

  private forget(key: string, old: ConvertedService): void {
    for (const node of old.nodes) release(this.nodeUsers, node, key);
    for (const pod of old.pods) release(this.podUsers, pod, key);
  }
}

function users(index: Map<string, Set<string>>, key: string): Set<string> {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  return set;
}

function release(index: Map<string, Set<string>>, key: string, service: string): void {
  const set = index.get(key);
  set?.delete(service);
  if (set?.size === 0) index.delete(key);
}
