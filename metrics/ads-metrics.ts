// The ADS server's observer for Prometheus: responses, resources, bytes and build time per type,
// NACKs, model changes, and each push's debounce, size, hand-out and convergence times. The server
// reports through xds's observer seam; this side only counts.
import { endpointsOnly, type ChangeEvent } from '../model/change.js';
import type {
  AdsObserver,
  NackReceived,
  PushInfo,
  PushKind,
  RefusalReason,
  ResponseSent,
  StreamView,
} from '../xds/server/observer.js';
import type { PortolanMetrics } from './metrics.js';

/** Per type: the prom-client children, and counts not yet handed to them. */
interface TypeCounts {
  readonly children: ReturnType<AdsMetrics['typeMetrics']>;
  responses: number;
  resources: number;
  bytes: number;
}

export class AdsMetrics implements AdsObserver {
  // Label lookups cost more than the increments; resolve each type's children once. The counters
  // are kept as plain numbers per response and handed to prom-client when it reads them.
  private readonly byType = new Map<string, TypeCounts>();
  /** Per push kind, its children, resolved once as the types' are (a push observes three). */
  private readonly byKind = new Map<PushKind, ReturnType<AdsMetrics['kindMetrics']>>();

  /** modelChanged's children by kind, resolved on first use (a series appears once counted). */
  private readonly changeKinds = new Map<string, ReturnType<PortolanMetrics['modelChanges']['labels']>>();

  constructor(private readonly metrics: PortolanMetrics) {
    metrics.onCollect(() => this.flush());
  }

  responseSent(_stream: StreamView, r: ResponseSent): void {
    let m = this.byType.get(r.typeUrl);
    if (!m)
      this.byType.set(
        r.typeUrl,
        (m = { children: this.typeMetrics(r.type), responses: 0, resources: 0, bytes: 0 }),
      );
    m.responses += 1;
    m.resources += r.resources;
    m.bytes += r.bytes;
    m.children.build.observe(r.buildMs / 1000);
  }

  private flush(): void {
    for (const m of this.byType.values()) {
      if (m.responses === 0) continue;
      m.children.responses.inc(m.responses);
      m.children.resources.inc(m.resources);
      m.children.bytes.inc(m.bytes);
      m.responses = m.resources = m.bytes = 0;
    }
  }

  nack(_stream: StreamView, n: NackReceived): void {
    this.metrics.nacks.inc({ type: n.type });
  }

  streamRefused(reason: RefusalReason): void {
    this.metrics.streamsRefused.inc({ reason });
  }

  modelChanged(event: ChangeEvent): void {
    const kind = endpointsOnly(event) ? 'endpoints' : 'services';
    let child = this.changeKinds.get(kind);
    if (!child) this.changeKinds.set(kind, (child = this.metrics.modelChanges.labels({ kind })));
    child.inc();
  }

  pushStarted(push: PushInfo): void {
    this.metrics.debounceSeconds.observe(push.debounceMs / 1000);
    this.metrics.changesPerPush.observe(push.changesMerged);
    this.forKind(push.kind).pushes.inc();
  }

  pushHandedOut(push: PushInfo, pushMs: number): void {
    this.forKind(push.kind).pushSeconds.observe(pushMs / 1000);
  }

  pushConverged(push: PushInfo, convergenceMs: number): void {
    this.forKind(push.kind).convergenceSeconds.observe(convergenceMs / 1000);
  }

  private forKind(kind: PushKind): ReturnType<AdsMetrics['kindMetrics']> {
    let m = this.byKind.get(kind);
    if (!m) this.byKind.set(kind, (m = this.kindMetrics(kind)));
    return m;
  }

  private kindMetrics(kind: PushKind) {
    const m = this.metrics;
    return {
      pushes: m.pushes.labels({ kind }),
      pushSeconds: m.pushSeconds.labels({ kind }),
      convergenceSeconds: m.convergenceSeconds.labels({ kind }),
    };
  }

  private typeMetrics(type: string) {
    const m = this.metrics;
    return {
      responses: m.responses.labels({ type }),
      resources: m.resourcesSent.labels({ type }),
      bytes: m.bytesSent.labels({ type }),
      build: m.responseBuildSeconds.labels(type),
    };
  }
}
