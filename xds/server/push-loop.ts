// The push loop: model and config changes are debounced into pushes (push-debouncer.ts); each push
// takes a new serving view (catalog, mesh config and what derives from them), applies it to the
// shared resource cache, which reports exactly what changed, hands that to the streams it concerns
// (the registry's subscription index), and follows the push until every stream it touched has sent
// it (convergence). It reports each step to the observer.
import type { MeshConfigSource } from '../../mesh/mesh-config.js';
import {
  changedHosts,
  configChanged,
  endpointsOnly,
  MAX_TRIGGER_NAMES,
  type ChangeEvent,
} from '../../model/change.js';
import type { ServiceDiscovery } from '../../model/discovery.js';
import type { GenerateContext, ServingView } from '../generators/generator.js';
import { servingView } from '../generators/view-memo.js';
import { narrowChange } from './narrow-change.js';
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
}

export class PushLoop {
  /** Encoded resources of the current view, shared by every stream. */
  readonly cache: ResourceCache;
  private view: ServingView;
  /**
   * Each proxy's context in the current view, made once: a stream asks for it per type it
   * subscribes to and per resource built. A new view starts a new map.
   */
  private contexts = new WeakMap<Proxy, GenerateContext>();
  private readonly debouncer: PushDebouncer;
  /** Pushes so far (one per debounced batch). */
  pushes = 0;

  constructor(private readonly options: PushLoopOptions) {
    this.view = this.nextView();
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
    this.debouncer.add(event);
  }

  stop(): void {
    this.debouncer.stop();
    this.cache.stop();
  }

  /** What generators build from for `proxy`, in the current view. */
  context(proxy: Proxy): GenerateContext {
    let ctx = this.contexts.get(proxy);
    if (!ctx) {
      // Field by field: a spread copy of the view cost more than the rest of this call.
      const { catalog, config, index, memo, trustDomain } = this.view;
      this.contexts.set(proxy, (ctx = { catalog, config, index, memo, trustDomain, proxy }));
    }
    return ctx;
  }

  private nextView(previous?: ServingView): ServingView {
    const { discovery, meshConfig, trustDomain } = this.options;
    return servingView(
      { catalog: discovery.catalog(), config: meshConfig.meshConfig(), ...(trustDomain && { trustDomain }) },
      previous,
    );
  }

  private push(change: MergedChange): void {
    const started = performance.now();
    const { observer, streams } = this.options;
    const push: PushInfo = {
      round: ++this.pushes,
      kind: pushKind(change.event),
      changesMerged: change.merged,
      debounceMs: started - change.firstSeen,
      trigger: pushTrigger(change.event),
    };
    observer.pushStarted?.(push);
    const previous = this.view;
    this.view = this.nextView(previous);
    this.contexts = new WeakMap();
    const changes = this.cache.apply(narrowChange(change.event, previous.config, this.view.config));
    const round = this.round(push, change.firstSeen);
    let touched = 0;
    // Only the streams that subscribe to something that changed (every stream on a config change).
    for (const stream of streams.affected(changes)) {
      // Counted before the stream may finish (synchronously, when it has nothing to send).
      round.add();
      if (stream.onChange(changes, round.member)) touched += 1;
      else round.member.done();
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
