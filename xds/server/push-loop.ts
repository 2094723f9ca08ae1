// The push loop: model and config changes are debounced into pushes (push-debouncer.ts); each push
// takes a new serving view (catalog, mesh config and what derives from them), applies the merged
// change event to the shared resource cache, which reports exactly what changed, hands that to the streams it concerns
// (the registry's subscription index), and follows the push until every stream it touched has sent
// it (convergence). It reports each step to the observer.
//
// It also keeps the config generation (config-dir/generations.ts) of the serving view: the highest
// generation among the events its pushes applied. A view taken later may read a newer publication
// whose event still waits in the debouncer, but the cache rebuilds only what the events applied name,
// so a response is counted as generated at the generation of the events applied, not the newest.
import type { MeshConfigSource } from '../../mesh/mesh-config.js';
import {
  changedHosts,
  configChanged,
  endpointsOnly,
  MAX_TRIGGER_NAMES,
  type ChangeEvent,
} from '../../model/change.js';
import type { ServiceDiscovery } from '../../model/discovery.js';
import {
  proxyContext,
  servingView,
  type GenerateContext,
  type ServingView,
} from '../generators/generator.js';
import type { Proxy } from '../proxy/proxy.js';
import type { PushLimiter } from './flow-control.js';
import type { AdsObserver, PushInfo, PushKind, PushTrigger } from './observer.js';
import { PushDebouncer, type DebounceOptions, type MergedChange } from './push-debouncer.js';
import { ResourceCache } from './resource-cache.js';
import type { PushRound } from './stream-pump.js';
import type { StreamRegistry } from './stream-registry.js';

/** Runs after each push over the context of every identified stream (the consistency check). */
export type PushCheck = (contexts: readonly GenerateContext[]) => void;

export interface PushLoopOptions {
  readonly discovery: Pick<ServiceDiscovery, 'catalog'>;
  readonly meshConfig: MeshConfigSource;
  readonly trustDomain?: string;
  readonly debounce: DebounceOptions;
  readonly limiter: PushLimiter;
  readonly streams: StreamRegistry;
  readonly observer: AdsObserver;
  readonly checkPush?: PushCheck;
  /** The config generation in force at the sources (the config directory's); 0 without one. */
  readonly configGeneration?: () => number;
}

/** How far pushes have come with the config generations (GET /debug/waitz reads it). */
export interface PushedGenerations {
  /** The config generation of the serving view: what responses are generated at now. */
  readonly generation: number;
  /** The highest generation an event waiting in the debouncer carries; undefined when none waits. */
  readonly waiting: number | undefined;
}

export class PushLoop {
  /** Encoded resources of the current serving view, shared by every stream. */
  readonly cache: ResourceCache;
  /** The catalog and mesh config being served, and what derives from them. */
  private serving: ServingView;
  private readonly debouncer: PushDebouncer;
  /** Pushes so far (one per debounced batch). */
  pushes = 0;
  /** The config generation of the serving view (see the top). */
  private servingGeneration: number;
  /** The highest generation of an event not pushed yet. */
  private waitingGeneration: number | undefined;

  constructor(private readonly options: PushLoopOptions) {
    // The first view is built whole from what is in force: it holds the source's generation.
    this.servingGeneration = options.configGeneration?.() ?? 0;
    this.serving = this.nextServing();
    this.cache = new ResourceCache((proxy) => this.context(proxy));
    const { limiter } = options;
    this.debouncer = new PushDebouncer(
      options.debounce,
      (c) => this.push(c),
      () => performance.now(),
      () => limiter.queuedPushes === 0,
    );
    limiter.onQueueEmpty = () => this.debouncer.resume();
  }

  /** Queues a change for the next push. */
  add(event: ChangeEvent): void {
    const generation = event.trigger?.generation;
    if (generation !== undefined && generation > (this.waitingGeneration ?? -1))
      this.waitingGeneration = generation;
    this.debouncer.add(event);
  }

  /** The serving view's config generation, and the newest one still waiting to be pushed. */
  generations(): PushedGenerations {
    return { generation: this.servingGeneration, waiting: this.waitingGeneration };
  }

  /** What a response built now is generated at. */
  readonly generation = (): number => this.servingGeneration;

  stop(): void {
    this.debouncer.stop();
    this.cache.stop();
  }

  /** What generators build from for `proxy`, in the current serving view. */
  context(proxy: Proxy): GenerateContext {
    // Made per call, not kept per proxy: seven fields copied cost less than a weak map entry and a
    // context per stream, which a connect storm promotes to the old generation for every stream
    // and a full collection then marks (ephemerons) and frees.
    return proxyContext(this.serving, proxy);
  }

  private nextServing(previous?: ServingView): ServingView {
    const { discovery, meshConfig, trustDomain } = this.options;
    return servingView(
      { catalog: discovery.catalog(), config: meshConfig.meshConfig(), ...(trustDomain && { trustDomain }) },
      previous,
    );
  }

  private push(change: MergedChange): void {
    const started = performance.now();
    const { observer, streams } = this.options;
    // The push's own generation, if a config publication is in it: what it changes for a stream.
    const pushed = change.event.trigger?.generation;
    if (pushed !== undefined && pushed > this.servingGeneration) this.servingGeneration = pushed;
    if (this.waitingGeneration !== undefined && this.waitingGeneration <= this.servingGeneration)
      this.waitingGeneration = undefined;
    const push: PushInfo = {
      round: ++this.pushes,
      kind: pushKind(change.event),
      changesMerged: change.merged,
      debounceMs: started - change.firstSeen,
      trigger: pushTrigger(change.event),
      generation: this.servingGeneration,
    };
    observer.pushStarted?.(push);
    this.serving = this.nextServing(this.serving);
    // The event names what changed by key; the cache rebuilds what read one of them.
    const changes = this.cache.apply(change.event);
    const round = this.round(push, change.firstSeen);
    let touched = 0;
    // Only the streams that subscribe to something that changed (every stream on a config change).
    for (const stream of streams.affected(changes)) {
      // Counted before the stream may finish (synchronously, when it has nothing to send).
      round.add();
      if (stream.onChange(changes, round.member)) {
        touched += 1;
        if (pushed !== undefined) stream.changedBy(pushed);
      } else round.member.done();
    }
    observer.pushHandedOut?.(push, performance.now() - started, touched);
    round.sealed();
    const check = this.options.checkPush;
    if (check) check(streams.list().flatMap((s) => (s.proxy ? [this.context(s.proxy)] : [])));
  }

  // Counts the streams a push touched; when the last of them has sent, the push has converged.
  private round(push: PushInfo, firstSeen: number): { member: PushRound; add(): void; sealed(): void } {
    let pending = 1; // the push itself, released when every stream was handed its work
    const finish = (): void => {
      if (--pending > 0) return;
      this.options.observer.pushConverged?.(push, performance.now() - firstSeen);
    };
    return {
      member: { done: finish },
      add: () => {
        pending += 1;
      },
      sealed: finish,
    };
  }
}

function pushTrigger(event: ChangeEvent): PushTrigger {
  const hosts = changedHosts(event);
  const hostnames: string[] = [];
  for (const h of hosts) {
    if (hostnames.length >= MAX_TRIGGER_NAMES) break;
    hostnames.push(h);
  }
  return {
    registries: event.trigger?.registries ?? [],
    files: event.trigger?.files ?? [],
    hostnames,
    hostnameCount: hosts.size,
  };
}

function pushKind(event: ChangeEvent): PushKind {
  if (configChanged(event)) return 'config';
  return endpointsOnly(event) ? 'eds' : 'services';
}
