// One simulated proxy on one ADS stream. Proxyless gRPC style walks LDS → RDS → CDS → EDS by name
// for one service, as grpc-js does; Envoy style subscribes to wildcard CDS and LDS, then EDS for
// every cluster and RDS for the port route. Both ACK every response, in SotW or delta form. The
// stream records when it first held its full config and when each marked endpoint change arrived.
import type * as grpc from '@grpc/grpc-js';
import { encodeDeltaDiscoveryRequest, encodeDiscoveryRequest } from '../../xds/proto/wire.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { deltaAck, markerSeq, readHead, sotwAck, wallNow } from './wire-lite.js';

export type StreamStyle = 'grpc' | 'envoy';
export type StreamApi = 'sotw' | 'delta';

export interface StreamSpec {
  readonly id: string;
  readonly style: StreamStyle;
  readonly api: StreamApi;
  /** The service a gRPC-style stream watches (its HOST). */
  readonly host: string;
  /** Whether to record endpoint-change markers (the streams watching the changed service). */
  readonly record: boolean;
}

export const SOTW_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
export const DELTA_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';
const PORT = 7070;
const identity = (b: Buffer): Buffer => b;

export class SimStream {
  configuredAt: number | undefined;
  /** [seq, time] for every response that carried an endpoint-change marker. */
  readonly marks: [number, number][] = [];
  responses = 0;
  bytes = 0;
  /** When the latest CDS response arrived (a change every stream's cluster carries: its arrival). */
  lastClusterAt = 0;
  error: string | undefined;
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private readonly names = new Map<string, string[]>();
  private readonly seen = new Set<string>();

  constructor(
    client: grpc.Client,
    private readonly spec: StreamSpec,
    private readonly allClusters: readonly string[],
    /** Sees the first response of each type, with the name subscribed (bench/proxyless-storm.ts keeps them). */
    private readonly onFirstResponse?: (typeUrl: string, name: string, bytes: Buffer) => void,
  ) {
    this.call = client.makeBidiStreamRequest(
      spec.api === 'sotw' ? SOTW_PATH : DELTA_PATH,
      identity,
      identity,
    );
    this.call.on('data', (bytes: Buffer) => this.onResponse(bytes));
    this.call.on('error', (err: Error) => {
      this.error = err.message;
    });
    const node =
      spec.style === 'grpc'
        ? { id: spec.id, cluster: 'bench', user_agent_name: 'gRPC Node bench' }
        : { id: spec.id, cluster: 'bench', user_agent_name: 'envoy' };
    if (spec.style === 'grpc') this.subscribe(LISTENER, [`${spec.host}:${PORT}`], node);
    else this.subscribe(CLUSTER, [], node);
  }

  close(): void {
    this.call.cancel();
  }

  private subscribe(typeUrl: string, names: string[], node?: object): void {
    this.names.set(typeUrl, names);
    if (this.spec.api === 'sotw') {
      this.call.write(
        encodeDiscoveryRequest({ ...(node && { node }), type_url: typeUrl, resource_names: names }),
      );
    } else {
      this.call.write(
        encodeDeltaDiscoveryRequest({
          ...(node && { node }),
          type_url: typeUrl,
          resource_names_subscribe: names,
        }),
      );
    }
  }

  // ACKs are encoded by hand: the load generator must not be what limits the measurement.
  private ack(typeUrl: string, versionInfo: string, nonce: string): void {
    this.call.write(
      this.spec.api === 'sotw'
        ? sotwAck(typeUrl, versionInfo, nonce, this.names.get(typeUrl) ?? [])
        : deltaAck(typeUrl, nonce),
    );
  }

  private onResponse(bytes: Buffer): void {
    const now = wallNow();
    this.responses += 1;
    this.bytes += bytes.length;
    const head = readHead(bytes);
    this.ack(head.typeUrl, head.versionInfo, head.nonce);
    const first = !this.seen.has(head.typeUrl);
    this.seen.add(head.typeUrl);
    if (first) this.onFirstResponse?.(head.typeUrl, this.names.get(head.typeUrl)?.[0] ?? '', bytes);
    if (head.typeUrl === CLUSTER) this.lastClusterAt = now;
    if (head.typeUrl === ENDPOINT && this.spec.record) {
      const seq = markerSeq(bytes);
      if (seq >= 0) this.marks.push([seq, now]);
    }
    if (first) this.follow(head.typeUrl);
    if (this.configuredAt === undefined && this.complete()) this.configuredAt = now;
  }

  // The next subscription a proxy makes once it holds a type for the first time.
  private follow(typeUrl: string): void {
    const name = `${this.spec.host}:${PORT}`;
    const cluster = `outbound|${PORT}||${this.spec.host}`;
    if (this.spec.style === 'grpc') {
      if (typeUrl === LISTENER) this.subscribe(ROUTE, [name]);
      else if (typeUrl === ROUTE) this.subscribe(CLUSTER, [cluster]);
      else if (typeUrl === CLUSTER) this.subscribe(ENDPOINT, [cluster]);
      return;
    }
    if (typeUrl === CLUSTER) {
      this.subscribe(ENDPOINT, [...this.allClusters]);
      this.subscribe(LISTENER, []);
    } else if (typeUrl === LISTENER) this.subscribe(ROUTE, [String(PORT)]);
  }

  private complete(): boolean {
    return [CLUSTER, ENDPOINT, LISTENER, ROUTE].every((t) => this.seen.has(t));
  }
}
