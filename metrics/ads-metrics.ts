// The ADS server's observer for Prometheus: responses, resources, bytes and build time per type,
// NACKs, model changes, and each push's debounce, size, hand-out and convergence times. The server
// reports through xds's observer seam; this side only counts.
import type { ChangeEvent } from '../model/change.js';
import type { AdsStream } from '../xds/server/ads-stream.js';
import type {
  AdsObserver,
  NackReceived,
  PushInfo,
  RefusalReason,
  ResponseSent,
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

  constructor(private readonly metrics: PortolanMetrics) {
    metrics.onCollect(() => this.flush());
  }

  responseSent(_stream: AdsStream, r: ResponseSent): void {
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

  nack(_stream: AdsStream, n: NackReceived): void {
    this.metrics.nacks.inc({ type: n.type });
  }

  streamRefused(reason: RefusalReason): void {
    this.metrics.streamsRefused.inc({ reason });
  }

  modelChanged(event: ChangeEvent): void {
    this.metrics.modelChanges.inc({ kind: event.endpointsOnly ? 'endpoints' : 'services' });
  }

  pushStarted(push: PushInfo): void {
    this.metrics.debounceSeconds.observe(push.debounceMs / 1000);
    this.metrics.changesPerPush.observe(push.changesMerged);
    this.metrics.pushes.inc({ kind: push.kind });
  }

  pushHandedOut(push: PushInfo, pushMs: number): void {
    this.metrics.pushSeconds.observe({ kind: push.kind }, pushMs / 1000);
  }

  pushConverged(push: PushInfo, convergenceMs: number): void {
    this.metrics.convergenceSeconds.observe({ kind: push.kind }, convergenceMs / 1000);
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
