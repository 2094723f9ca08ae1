// Make-before-break, per stream: the order in which a proxy's view changes, so that it never routes
// to a cluster it cannot use (xDS protocol, "Eventual consistency considerations"). One rule for SotW
// and delta; the pump sends types in the order CDS, EDS, LDS, RDS (stream-pump.ts), this decides
// what waits.
//
// Additions. An Envoy-style client (one that warms clusters: Envoy) keeps a new cluster out of use
// until it holds the cluster's load assignment, and holds back its CDS ACK until then
// (envoyproxy/envoy#23321). So after a CDS response that adds clusters to such a client, its LDS and
// RDS work stays pending, held, until the client answers that CDS response or a later one: by then it
// has asked for the new clusters' EDS and been sent it (EDS goes before LDS and RDS). A listener or
// route naming a new cluster thus reaches it only once it holds the cluster's endpoints.
//
// Proxyless gRPC clients walk LDS → RDS → CDS → EDS by name: they ask for a cluster only once a
// route names it, and hold that route's calls until the cluster resolves. Nothing can be sent ahead
// of the route for them, and nothing is held: for them "holding a cluster" means having asked for it,
// and each name is answered as soon as asked.
//
// Removals (every client). A cluster or load assignment that disappeared stays in the CDS/EDS
// responses while the stream has LDS or RDS work pending, held or not: the listeners and routes stop
// naming it first. Once nothing is pending or in flight, CDS and EDS are evaluated again without it.
//
// A client that never answers its CDS response holds back its own LDS and RDS only until
// WARMING_DEADLINE_MS, Envoy's own initial fetch timeout (after which it warms without endpoints).
import type { Proxy } from '../proxy/proxy.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';

/** How long LDS and RDS wait at most for the answer to a CDS response that added clusters. */
export const WARMING_DEADLINE_MS = 15_000;

/** Whether `proxy` warms the clusters it is sent (Envoy), so its LDS and RDS wait for them. */
export function warmsClusters(proxy: Proxy): boolean {
  return proxy.kind === 'envoy';
}

export class MakeBeforeBreak {
  /** The nonce of the last CDS response that added clusters, while the client has not answered it. */
  private warmingNonce: number | undefined;
  private deadline: NodeJS.Timeout | undefined;
  /** A CDS or EDS response kept removed resources: evaluate both again once nothing is pending. */
  private kept = false;

  constructor(
    /** The stream's pending work. */
    private readonly pending: { has(typeUrl: string): boolean },
    /** Runs when held work may go (the deadline passed); an answer releases it synchronously. */
    private readonly released: () => void,
    private readonly deadlineMs = WARMING_DEADLINE_MS,
  ) {}

  /** Whether pending work of `typeUrl` must wait: LDS and RDS while new clusters warm. */
  holds(typeUrl: string): boolean {
    return this.warmingNonce !== undefined && (typeUrl === LISTENER || typeUrl === ROUTE);
  }

  /** A CDS response (`nonce`) went out to a client that warms clusters, adding `added` of them. */
  clustersSent(nonce: string, added: number): void {
    if (added === 0) return;
    this.warmingNonce = Number(nonce);
    // Each response that adds clusters gives the client the whole deadline to warm them.
    clearTimeout(this.deadline);
    this.deadline = setTimeout(() => {
      this.end();
      this.released();
    }, this.deadlineMs);
    this.deadline.unref();
  }

  /**
   * The client answered (ACK or NACK) its `typeUrl` response with `nonce`; returns whether that
   * released held work. Nonces count up per stream: an answer to a later CDS response counts too.
   */
  answered(typeUrl: string, nonce: string): boolean {
    if (typeUrl !== CLUSTER || this.warmingNonce === undefined) return false;
    if (!(Number(nonce) >= this.warmingNonce)) return false;
    this.end();
    return true;
  }

  /** Whether a `typeUrl` response must keep what disappeared (and call `keptRemoved`). */
  keepsRemovals(typeUrl: string): boolean {
    return (
      (typeUrl === CLUSTER || typeUrl === ENDPOINT) && (this.pending.has(LISTENER) || this.pending.has(ROUTE))
    );
  }

  keptRemoved(): void {
    this.kept = true;
  }

  /** Nothing is pending or in flight: whether CDS and EDS must be evaluated again (what was kept goes). */
  settled(): boolean {
    const kept = this.kept;
    this.kept = false;
    return kept;
  }

  close(): void {
    this.end();
  }

  private end(): void {
    this.warmingNonce = undefined;
    clearTimeout(this.deadline);
    this.deadline = undefined;
  }
}
