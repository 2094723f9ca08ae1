// The `zookeeper` registry: Curator x-discovery and Dubbo providers read from ZooKeeper, published as
// whole snapshots. This file is the connection's lifecycle and the publishing; what the nodes make
// (parsed groups, hostnames, remembered services, node problems) is node-model.ts.
//
// Lifecycle of the connection:
// - connected (first time, or again within the same session): full resync — every watched node is
//   re-read into fresh mirrors, which replace the old ones only when the whole read succeeded;
// - disconnected: the last good snapshot stays published, marked stale, until a resync completes;
// - session expired: the session is replaced by a new one, which resyncs the same way;
// - a resync that fails while connected is retried with exponential backoff.
// Between resyncs, watch events update the mirrors node by node and a snapshot is published per turn
// of the event loop, costing what changed: the watcher names the groups an event changed, only their
// nodes are parsed again, only the hostnames they (and services remembered from them) touch are
// assembled again, and those alone are replaced in the last snapshot (layered maps) and diffed. A
// resync recomputes everything. A node that cannot be parsed is logged, listed in debug(), and skipped.
//
// Right after a reconnect (from losing the connection until one session timeout after the resync
// that follows), a service whose every endpoint vanished at once keeps its last endpoints, stale,
// for --zk-empty-hold (adapters/vanish-hold.ts): the fleet's ephemeral nodes may have expired with
// sessions cut off by the same fault, and come back as its clients re-register.
import { performance } from 'node:perf_hooks';
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';
import { silentLogger, type Logger } from '../../log/logger.js';
import { StateBackedRegistry } from '../registry-state.js';
import { LayeredMap } from '../../model/layered-map.js';
import { Backoff, type BackoffOptions } from '../../model/backoff.js';
import { layoutsFor, type Layout } from './layouts.js';
import type { ZooKeeperOptions } from './flags.js';
import type { RegistrySnapshot } from '../../model/change.js';
import { emptyMirror, TreeWatcher } from './tree-watcher.js';
import { ZkNodeModel } from './node-model.js';
import { ZkSession } from './client.js';
import { DEFAULT_VANISH_HOLD, VanishHold } from '../vanish-hold.js';
import { parseDurationMs } from '../option-values.js';

export interface ZooKeeperRegistryConfig extends ZooKeeperOptions {
  readonly logger?: Logger;
  /** How long `start()` waits for the first sync; after that it resolves unsynced and keeps trying. */
  readonly startTimeoutMs?: number;
  /** node-zookeeper-client's longest pause between rounds of connection attempts. */
  readonly spinDelayMs?: number;
}

type Connection = 'connecting' | 'connected' | 'disconnected' | 'expired' | 'closed';

const MAX_REPORTED_PROBLEMS = 100;

/** Retrying a failed resync: 250 ms doubling to 30 s, half of each delay random. */
export const RESYNC_BACKOFF: BackoffOptions = { initialMs: 250, maxMs: 30_000, jitter: 0.5 };

export class ZooKeeperRegistry extends StateBackedRegistry {
  readonly name = 'zookeeper';
  private readonly layouts: readonly Layout[];
  private readonly logger: Logger;
  private readonly backoff = new Backoff(RESYNC_BACKOFF);
  private session: ZkSession | undefined;
  private watchers: TreeWatcher[] = [];
  private connection: Connection = 'closed';
  private stopped = false;
  private resyncGen = 0;
  private resyncing = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private publishPending: NodeJS.Immediate | undefined;
  private firstSync: (() => void) | undefined;
  private started: Promise<void> | undefined;
  private readonly nodes: ZkNodeModel;
  /** Per layout (by index), the groups changed since the last publish. */
  private readonly dirtyGroups: Set<string>[];
  /** Hostnames to recompute at the next publish besides those of the dirty groups (held ones). */
  private readonly dirtyHosts = new Set<string>();
  private readonly stats = { sessions: 0, resyncs: 0, resyncFailures: 0, unansweredConnections: 0 };
  private lastResync: { at: string; durationMs: number } | undefined;
  private readonly hold: VanishHold;
  /** Whether a resync has ever completed: only a reconnect after one arms the hold. */
  private everSynced = false;
  /** Until when (epoch ms) a vanishing service is held; Infinity while disconnected after a sync. */
  private holdArmedUntil = 0;

  constructor(private readonly config: ZooKeeperRegistryConfig) {
    super();
    this.layouts = layoutsFor(config);
    this.dirtyGroups = this.layouts.map(() => new Set<string>());
    this.logger = config.logger ?? silentLogger;
    this.nodes = new ZkNodeModel(this.layouts, this.name, this.logger);
    this.hold = new VanishHold({
      holdMs: config.emptyHoldMs ?? parseDurationMs(DEFAULT_VANISH_HOLD, '--zk-empty-hold'),
      expired: () => {
        // Each held service decides again: the ones whose hold ran out are applied.
        for (const { service } of this.hold.held(Infinity)) this.dirtyHosts.add(service);
        this.schedulePublish();
      },
    });
  }

  /** Connects and resolves after the first sync (or after `startTimeoutMs`); a second call joins the first. */
  start(): Promise<void> {
    this.started ??= this.connectAndSync();
    return this.started;
  }

  private async connectAndSync(): Promise<void> {
    const synced = new Promise<void>((resolve) => (this.firstSync = resolve));
    this.openSession();
    const waitMs = this.config.startTimeoutMs ?? Math.min(this.config.sessionTimeoutMs, 10_000);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    await Promise.race([synced, timedOut]);
    clearTimeout(timer);
    if (!this.hasSynced() && !this.stopped) {
      const err = new Error(
        `no answer from ZooKeeper at ${this.config.hosts} within ${waitMs} ms; still trying`,
      );
      this.state.fail(err);
      this.logger.warn({ hosts: this.config.hosts }, err.message);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.resyncGen++;
    this.cancelRetry();
    if (this.publishPending) clearImmediate(this.publishPending);
    this.closeSession();
    this.hold.stop();
    this.connection = 'closed';
    this.firstSync?.();
  }

  debug(): unknown {
    return {
      hosts: this.config.hosts,
      sessionTimeoutMs: this.config.sessionTimeoutMs,
      connection: this.connection,
      sessionId: this.session?.sessionId(),
      ...this.stats,
      ...(this.lastResync && { lastResync: this.lastResync }),
      layouts: this.layouts.map((layout, i) => {
        const mirror = this.watchers[i]?.mirror() ?? emptyMirror();
        let nodes = 0;
        for (const leaves of mirror.values()) nodes += leaves.size;
        return {
          name: layout.name,
          root: layout.root,
          groups: mirror.size,
          instanceNodes: nodes,
          watches: this.watchers[i]?.watchCount() ?? 0,
        };
      }),
      emptyHold: {
        holdMs: this.hold.holdMs,
        armed: this.holdArmed(),
        held: this.hold.held(),
        heldCount: this.hold.size,
      },
      disabledInstances: this.nodes.disabled,
      invalidNodeCount: this.nodes.problemCount(),
      invalidNodes: this.nodes.problemList().slice(0, MAX_REPORTED_PROBLEMS),
    };
  }

  private openSession(): void {
    const session = new ZkSession(this.config.hosts, {
      sessionTimeoutMs: this.config.sessionTimeoutMs,
      spinDelayMs: this.config.spinDelayMs ?? 1000,
    });
    this.session = session;
    this.stats.sessions++;
    this.connection = 'connecting';
    this.watchers = this.layouts.map(
      (layout, i) =>
        new TreeWatcher(session, layout, {
          changed: (groups) => {
            for (const group of groups) this.dirtyGroups[i]?.add(group);
            this.schedulePublish();
          },
          failed: (err) => this.onWatchFailure(err),
        }),
    );
    // Events of a replaced session are ignored: only the current one speaks for the registry.
    session.on('connected', () => {
      if (session === this.session) this.onConnected(session);
    });
    session.on('disconnected', () => {
      if (session === this.session) this.onDisconnected();
    });
    session.on('expired', () => {
      if (session === this.session) this.onExpired();
    });
    session.on('unresponsive', (what) => {
      if (session !== this.session) return;
      this.stats.unansweredConnections++;
      const message = what === 'handshake' ? 'connection handshake' : 'probe read';
      this.logger.warn({ hosts: this.config.hosts }, `ZooKeeper did not answer the ${message}; reconnecting`);
    });
    session.on('authenticationFailed', () => {
      if (session !== this.session) return;
      this.state.fail(new Error('ZooKeeper refused the authentication'));
      this.logger.error({ hosts: this.config.hosts }, 'ZooKeeper authentication failed');
    });
    session.connect();
  }

  private closeSession(): void {
    for (const watcher of this.watchers) watcher.close();
    this.session?.close();
  }

  private onConnected(session: ZkSession): void {
    this.connection = 'connected';
    this.logger.info({ hosts: this.config.hosts, sessionId: session.sessionId() }, 'connected to ZooKeeper');
    void this.resync();
  }

  private onDisconnected(): void {
    if (this.connection === 'connected') {
      this.logger.warn(
        { hosts: this.config.hosts },
        'disconnected from ZooKeeper; serving the last good state',
      );
    }
    this.connection = 'disconnected';
    this.armHold();
    this.abandonResync();
    this.state.fail(new Error(`disconnected from ZooKeeper at ${this.config.hosts}`));
  }

  private onExpired(): void {
    this.logger.warn({ hosts: this.config.hosts }, 'ZooKeeper session expired; opening a new session');
    this.armHold();
    this.abandonResync();
    this.state.fail(new Error('ZooKeeper session expired; resyncing on a new session'));
    this.closeSession();
    this.openSession();
    this.connection = 'expired';
  }

  private abandonResync(): void {
    this.resyncGen++;
    this.resyncing = false;
    this.cancelRetry();
    for (const watcher of this.watchers) watcher.abort();
  }

  /** Re-reads everything; publishes only a complete read. The last good snapshot stays meanwhile. */
  private async resync(): Promise<void> {
    const gen = ++this.resyncGen;
    this.cancelRetry();
    this.resyncing = true;
    this.stats.resyncs++;
    const watchers = this.watchers;
    const started = performance.now();
    const timeoutMs = Math.max(10_000, this.config.sessionTimeoutMs);
    let timer: NodeJS.Timeout | undefined;
    try {
      const mirrors = await Promise.race([
        Promise.all(watchers.map((w) => w.load())),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`ZooKeeper resync took over ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
      if (gen !== this.resyncGen || this.stopped) return;
      watchers.forEach((w, i) => w.adopt(mirrors[i] ?? emptyMirror()));
      this.resyncing = false;
      this.backoff.reset();
      const durationMs = Math.round(performance.now() - started);
      this.lastResync = { at: new Date().toISOString(), durationMs };
      if (this.holdArmedUntil === Infinity) this.holdArmedUntil = Date.now() + this.config.sessionTimeoutMs;
      this.everSynced = true;
      this.publish();
      this.logger.info({ durationMs, ...this.counts() }, 'ZooKeeper resync complete');
      this.firstSync?.();
      this.firstSync = undefined;
    } catch (err) {
      if (gen !== this.resyncGen || this.stopped) return;
      for (const w of watchers) w.abort();
      this.resyncing = false;
      this.stats.resyncFailures++;
      this.state.fail(err);
      // While disconnected, the reconnection resyncs; only a connected failure needs a timer.
      if (this.session?.isConnected()) {
        const delayMs = this.backoff.next();
        this.logger.warn({ err, delayMs }, 'ZooKeeper resync failed; retrying');
        this.retryResync(delayMs);
      } else {
        this.logger.warn({ err }, 'ZooKeeper resync failed; waiting for the connection');
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** A read after a watch event failed: the mirror may have missed a change, so resync (backed off). */
  private onWatchFailure(err: unknown): void {
    this.logger.warn({ err }, 'ZooKeeper read after a watch event failed; resyncing');
    this.state.fail(err);
    if (this.resyncing || this.retryTimer) return;
    this.retryResync(this.backoff.next());
  }

  private retryResync(delayMs: number): void {
    this.cancelRetry();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.resync();
    }, delayMs);
  }

  private cancelRetry(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  /** Losing the connection after a sync arms the hold, until a session timeout after the next resync. */
  private armHold(): void {
    if (this.everSynced) this.holdArmedUntil = Infinity;
  }

  private holdArmed(): boolean {
    return Date.now() < this.holdArmedUntil;
  }

  private schedulePublish(): void {
    if (this.publishPending) return;
    this.publishPending = setImmediate(() => {
      this.publishPending = undefined;
      // During a resync its adoption publishes; while disconnected the reconnection's resync will.
      if (this.stopped || this.resyncing || this.connection !== 'connected') return;
      this.publish(false);
    });
  }

  /** A resync's publish (`full`) recomputes everything; an event's, the dirty groups and hosts only. */
  private publish(full = true): void {
    const current = this.state.snapshot();
    const hosts = new Set<string>(this.dirtyHosts);
    this.dirtyHosts.clear();
    this.dirtyGroups.forEach((dirty, i) => {
      this.nodes.readLayout(i, this.watchers[i]?.mirror() ?? emptyMirror(), dirty, full, hosts);
      dirty.clear();
    });
    if (full) {
      for (const host of current.services.keys()) hosts.add(host);
      for (const { service } of this.hold.held(Infinity)) hosts.add(service);
    }
    const services: [string, Service | undefined][] = [];
    const endpoints: [string, readonly Endpoint[] | undefined][] = [];
    for (const host of [...hosts].sort()) {
      const resolved = this.nodes.resolveHost(host);
      services.push([host, resolved?.service]);
      endpoints.push([host, resolved && this.holdVanished(host, resolved.endpoints, current)]);
      if (!resolved) this.hold.release(host);
    }
    const next = full
      ? { services: definedOnly(services), endpoints: definedOnly(endpoints) }
      : {
          services: LayeredMap.of(current.services).with(services),
          endpoints: LayeredMap.of(current.endpoints).with(endpoints),
        };
    this.state.replace(next, this.hold.problem(), undefined, full ? undefined : [...hosts]);
  }

  /** The endpoints to publish for `host`: its last ones if it just lost all of them while the hold is armed. */
  private holdVanished(
    host: string,
    list: readonly Endpoint[],
    current: RegistrySnapshot,
  ): readonly Endpoint[] {
    const before = current.endpoints.get(host) ?? [];
    const held = this.hold.isHeld(host);
    if (this.hold.decide(host, before.length, list.length, this.holdArmed()) === 'hold') {
      if (!held)
        this.logger.warn(
          { service: host, endpoints: before.length, until: this.hold.until(host) },
          'every endpoint of a ZooKeeper service vanished right after a reconnect; keeping its last endpoints, stale',
        );
      return before;
    }
    if (held) this.logger.info({ service: host, endpoints: list.length }, 'ZooKeeper service hold ended');
    return list;
  }

  private counts(): { services: number; endpoints: number; invalidNodes: number } {
    const { services, endpoints } = this.status();
    return { services, endpoints, invalidNodes: this.nodes.problemCount() };
  }
}

function definedOnly<V>(entries: readonly [string, V | undefined][]): Map<string, V> {
  const map = new Map<string, V>();
  for (const [key, value] of entries) if (value !== undefined) map.set(key, value);
  return map;
}
