// What the agent keeps per node to serve through control-plane outages: per type, the resources the
// control plane sent and the client ACKed (a NACKed response changes nothing), with the response's
// version. A client that (re)connects while the control plane is unreachable is served from here.
//
// Bounded: at most `maxNodes` nodes and `maxBytes` of resources in all; beyond either, the least
// recently used nodes go (at once, not at the next change). A node whose config alone exceeds
// `maxBytes` is not kept. Nodes are keyed by the whole node a client sent (cache-key.ts: its id and
// a hash of the rest), so a node that differs in anything has an entry of its own. Changes are handed to `persist` (cache-file.ts) so a restart keeps them.
import type { EncodedResource } from '../../xds/proto/resource.js';
import { CLUSTER, LISTENER } from '../../xds/proto/type-urls.js';

export interface CachedType {
  /** The SotW version_info of the last ACKed response (delta: its system_version_info). */
  readonly versionInfo: string;
  readonly resources: ReadonlyMap<string, EncodedResource>;
  /** When an ACK last changed it (ms since the epoch). */
  readonly updatedAt: number;
}

export interface CachedNode {
  readonly nodeId: string;
  readonly types: ReadonlyMap<string, CachedType>;
  readonly bytes: number;
  readonly updatedAt: number;
}

export interface CacheLimits {
  readonly maxNodes: number;
  readonly maxBytes: number;
}

export interface CacheListener {
  /** `node` changed (undefined: it was evicted). */
  changed(nodeId: string, node: CachedNode | undefined): void;
}

interface MutableType {
  versionInfo: string;
  resources: Map<string, EncodedResource>;
  updatedAt: number;
}

interface MutableNode {
  readonly nodeId: string;
  readonly types: Map<string, MutableType>;
  bytes: number;
  updatedAt: number;
  lastUsed: number;
}

/** SotW LDS and CDS responses hold every subscribed resource: a missing one was removed. */
function fullState(typeUrl: string): boolean {
  return typeUrl === LISTENER || typeUrl === CLUSTER;
}

export class NodeCache {
  private readonly nodes = new Map<string, MutableNode>();
  private totalBytes = 0;
  private readonly tooBig = new Set<string>();

  constructor(
    private readonly limits: CacheLimits,
    private readonly listener?: CacheListener,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The cached resources of `typeUrl` for `nodeId`; marks the node as used. */
  get(nodeId: string, typeUrl: string): CachedType | undefined {
    const node = this.nodes.get(nodeId);
    if (!node) return undefined;
    node.lastUsed = this.clock();
    return node.types.get(typeUrl);
  }

  node(nodeId: string): CachedNode | undefined {
    return this.nodes.get(nodeId);
  }

  list(): CachedNode[] {
    return [...this.nodes.values()];
  }

  get bytes(): number {
    return this.totalBytes;
  }

  /** When the newest entry was written (ms since the epoch), or undefined when empty. */
  newestUpdate(): number | undefined {
    let newest: number | undefined;
    for (const n of this.nodes.values())
      if (newest === undefined || n.updatedAt > newest) newest = n.updatedAt;
    return newest;
  }

  /**
   * A SotW response the client ACKed, sent for subscription `sub`. LDS and CDS responses are complete
   * for what they cover (a subscribed name missing was removed); RDS and EDS ones may be partial.
   * Names the client no longer subscribes to are dropped.
   */
  applySotw(
    nodeId: string,
    typeUrl: string,
    versionInfo: string,
    resources: readonly EncodedResource[],
    sub: { readonly wildcard: boolean; readonly names: ReadonlySet<string> },
  ): void {
    const complete = fullState(typeUrl);
    this.update(nodeId, typeUrl, versionInfo, (map) => {
      for (const name of [...map.keys()]) if (complete || !sub.names.has(name)) map.delete(name);
      for (const r of resources) map.set(r.name, r);
    });
  }

  /** A delta response the client ACKed: resources added or changed, and removed names. */
  applyDelta(
    nodeId: string,
    typeUrl: string,
    systemVersion: string,
    resources: readonly EncodedResource[],
    removed: readonly string[],
  ): void {
    this.update(nodeId, typeUrl, systemVersion, (map) => {
      for (const r of resources) map.set(r.name, r);
      for (const n of removed) map.delete(n);
    });
  }

  /** The client unsubscribed from `names` (delta): it no longer holds them. */
  forget(nodeId: string, typeUrl: string, names: readonly string[]): void {
    const entry = this.nodes.get(nodeId)?.types.get(typeUrl);
    if (!entry || names.every((n) => !entry.resources.has(n))) return;
    this.update(nodeId, typeUrl, entry.versionInfo, (map) => {
      for (const n of names) map.delete(n);
    });
  }

  /** Restores a node read from disk (no listener call); bounds apply. */
  restore(node: CachedNode): void {
    const types = new Map<string, MutableType>();
    let bytes = 0;
    for (const [typeUrl, t] of node.types) {
      types.set(typeUrl, {
        versionInfo: t.versionInfo,
        resources: new Map(t.resources),
        updatedAt: t.updatedAt,
      });
      for (const r of t.resources.values()) bytes += sizeOf(r);
    }
    if (bytes > this.limits.maxBytes) return;
    this.remove(node.nodeId, false);
    this.nodes.set(node.nodeId, {
      nodeId: node.nodeId,
      types,
      bytes,
      updatedAt: node.updatedAt,
      lastUsed: node.updatedAt,
    });
    this.totalBytes += bytes;
    this.evict(node.nodeId, false);
  }

  private update(
    nodeId: string,
    typeUrl: string,
    versionInfo: string,
    change: (map: Map<string, EncodedResource>) => void,
  ): void {
    const now = this.clock();
    let node = this.nodes.get(nodeId);
    if (!node) {
      node = { nodeId, types: new Map(), bytes: 0, updatedAt: now, lastUsed: now };
      this.nodes.set(nodeId, node);
    }
    const type = node.types.get(typeUrl) ?? {
      versionInfo,
      resources: new Map<string, EncodedResource>(),
      updatedAt: now,
    };
    change(type.resources);
    type.versionInfo = versionInfo;
    type.updatedAt = now;
    node.types.set(typeUrl, type);
    node.updatedAt = now;
    node.lastUsed = now;
    this.totalBytes -= node.bytes;
    node.bytes = 0;
    for (const t of node.types.values()) for (const r of t.resources.values()) node.bytes += sizeOf(r);
    this.totalBytes += node.bytes;
    if (node.bytes > this.limits.maxBytes) {
      // Keeping part of a node's config would serve a config that never was: keep none of it.
      this.tooBig.add(nodeId);
      this.remove(nodeId, true);
      return;
    }
    this.tooBig.delete(nodeId);
    this.evict(nodeId, true);
    this.listener?.changed(nodeId, node);
  }

  /** Whether the last update of `nodeId` was dropped for exceeding the byte limit alone. */
  exceededLimit(nodeId: string): boolean {
    return this.tooBig.has(nodeId);
  }

  /** Least recently used nodes out, never `keep`, until within both limits. */
  private evict(keep: string, notify: boolean): void {
    while (this.nodes.size > this.limits.maxNodes || this.totalBytes > this.limits.maxBytes) {
      let victim: MutableNode | undefined;
      for (const n of this.nodes.values())
        if (n.nodeId !== keep && (!victim || n.lastUsed < victim.lastUsed)) victim = n;
      if (!victim) return;
      this.remove(victim.nodeId, notify);
    }
  }

  private remove(nodeId: string, notify: boolean): void {
    const node = this.nodes.get(nodeId);
    if (!node) return;
    this.nodes.delete(nodeId);
    this.totalBytes -= node.bytes;
    if (notify) this.listener?.changed(nodeId, undefined);
  }
}

/** What a resource costs in memory, near enough: its bytes plus its name and version. */
export function sizeOf(r: EncodedResource): number {
  return r.value.length + r.name.length * 2 + r.version.length * 2 + 64;
}
