// The agent's Prometheus metrics (prom-client, as metrics/ does for the server), served at
// GET /metrics on the status port. Gauges that mirror live state are read at scrape time.
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';

/** What the gauges read, at each scrape. */
export interface AgentLiveState {
  upstreamConnected(): boolean;
  /** Times the control plane answered again after being unreachable, since start. */
  upstreamReconnects(): number;
  localStreams(api: 'sotw' | 'delta'): number;
  sdsStreams(): number;
  certificateNotAfter(): Date | undefined;
  /** When the node cache last changed (ms since the epoch). */
  cacheUpdatedAt(): number | undefined;
  cacheNodes(): number;
  cacheBytes(): number;
}

export class AgentMetrics {
  readonly registry = new Registry();
  readonly cacheServed: Counter<'type'>;
  readonly refusedStreams: Counter<'code'>;
  readonly sdsPushes: Counter;
  readonly certificates: Counter<'result'>;
  readonly childRestarts: Counter;

  constructor(live: AgentLiveState, now: () => number = Date.now) {
    const registers = [this.registry];
    // The lag histogram samples every 100 ms, not prom-client's 10 ms: each sample wakes the process,
    // and an agent runs on every VM (metrics/metrics.ts has what it cost the server).
    collectDefaultMetrics({
      register: this.registry,
      prefix: 'portolan_agent_process_',
      eventLoopMonitoringPrecision: 100,
    });
    new Gauge({
      name: 'portolan_agent_upstream_connected',
      help: '1 when the control plane is reachable and answering, else 0',
      registers,
      collect() {
        this.set(live.upstreamConnected() ? 1 : 0);
      },
    });
    let reconnectsSeen = 0;
    new Counter({
      name: 'portolan_agent_upstream_reconnects_total',
      help: 'Times the control plane answered again after being unreachable',
      registers,
      collect() {
        const n = live.upstreamReconnects();
        if (n > reconnectsSeen) this.inc(n - reconnectsSeen);
        reconnectsSeen = n;
      },
    });
    new Gauge({
      name: 'portolan_agent_local_streams',
      help: 'Open local xDS streams, by API (sotw, delta)',
      labelNames: ['api'],
      registers,
      collect() {
        this.set({ api: 'sotw' }, live.localStreams('sotw'));
        this.set({ api: 'delta' }, live.localStreams('delta'));
      },
    });
    new Gauge({
      name: 'portolan_agent_sds_streams',
      help: 'Open SDS streams on the SDS socket',
      registers,
      collect() {
        this.set(live.sdsStreams());
      },
    });
    new Gauge({
      name: 'portolan_agent_certificate_expiry_seconds',
      help: 'Seconds until the workload certificate expires (negative: expired; absent: none yet)',
      registers,
      collect() {
        const notAfter = live.certificateNotAfter();
        this.reset();
        if (notAfter) this.set((notAfter.getTime() - now()) / 1000);
      },
    });
    new Gauge({
      name: 'portolan_agent_cache_age_seconds',
      help: 'Seconds since the node cache last took a config the control plane sent (absent: empty)',
      registers,
      collect() {
        const at = live.cacheUpdatedAt();
        this.reset();
        if (at !== undefined) this.set((now() - at) / 1000);
      },
    });
    new Gauge({
      name: 'portolan_agent_cache_nodes',
      help: 'Nodes in the node cache',
      registers,
      collect() {
        this.set(live.cacheNodes());
      },
    });
    new Gauge({
      name: 'portolan_agent_cache_bytes',
      help: 'Bytes of resources in the node cache',
      registers,
      collect() {
        this.set(live.cacheBytes());
      },
    });
    this.cacheServed = new Counter({
      name: 'portolan_agent_cache_responses_total',
      help: 'Responses served to local clients from the node cache (control plane unreachable or slow), by type',
      labelNames: ['type'],
      registers,
    });
    this.refusedStreams = new Counter({
      name: 'portolan_agent_local_streams_refused_total',
      help: 'Local xDS streams ended with an error status, by gRPC code',
      labelNames: ['code'],
      registers,
    });
    this.sdsPushes = new Counter({
      name: 'portolan_agent_sds_pushes_total',
      help: 'SDS responses pushed to open streams after a certificate or trust bundle change',
      registers,
    });
    this.certificates = new Counter({
      name: 'portolan_agent_certificate_requests_total',
      help: 'Certificate requests to the CA, by result (issued, failed)',
      labelNames: ['result'],
      registers,
    });
    this.childRestarts = new Counter({
      name: 'portolan_agent_child_restarts_total',
      help: 'Times the supervised command was restarted after it exited',
      registers,
    });
  }
}
