// envoy.service.discovery.v3.AggregatedDiscoveryService on @grpc/grpc-js: the method table, and
// each call's life as a stream — refused until the discovery has synced, registered while open,
// fed its requests in order, ended (with a gRPC status) on a request the stream refuses.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log/logger.js';
import { proxyFromNode, type NodeInfo, type Proxy } from '../proxy/proxy.js';
import { firstProxy, StreamError, type AdsApi, type AdsStream, type StreamCall } from './ads-stream.js';
import type { AdsObserver } from './observer.js';
import type { StreamRegistry } from './stream-registry.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const DELTA_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';

const identity = (b: Buffer): Buffer => b;

const bidi = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: true,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

const ADS_SERVICE: grpc.ServiceDefinition = {
  StreamAggregatedResources: bidi(ADS_PATH),
  DeltaAggregatedResources: bidi(DELTA_PATH),
};

type AdsCall = grpc.ServerDuplexStream<Buffer, Buffer>;

/**
 * Decides, from the first request's node and the call (its TLS peer), whether a stream may proceed:
 * a refusal, or the peer's verified identity (kept on the stream, shown in /debug/adsz).
 */
export type AdsAuthorizer = (
  proxy: Proxy,
  call: AdsCall,
) => { code: grpc.status; reason: string } | { identity: string } | undefined;

/**
 * A check of every stream on every port once its node is known (and, on the secure port, its peer
 * identity), before anything is answered: a refusal ends the stream with its status and reason.
 * Auto-registration refuses agents that may not join their WorkloadGroup this way.
 */
export type StreamAdmission = (
  stream: AdsStream,
  proxy: Proxy,
) => { code: grpc.status; reason: string } | undefined;

export interface AdsServiceDeps {
  /** Whether every registry has synced; until then streams are refused. */
  readonly ready: () => boolean;
  readonly streams: StreamRegistry;
  /** A new stream of the variant the client called. */
  readonly open: (api: AdsApi, id: string, peer: string, call: StreamCall) => AdsStream;
  readonly observer: AdsObserver;
  readonly admission?: StreamAdmission;
  readonly logger: Logger;
}

export class AdsService {
  constructor(private readonly deps: AdsServiceDeps) {}

  /** Serves ADS on `server`; with `authorize`, each stream's first node is checked before anything is sent. */
  register(server: grpc.Server, authorize?: AdsAuthorizer): void {
    server.addService(ADS_SERVICE, {
      StreamAggregatedResources: (call: AdsCall) => this.serve(call, 'sotw', authorize),
      DeltaAggregatedResources: (call: AdsCall) => this.serve(call, 'delta', authorize),
    });
  }

  private serve(call: AdsCall, api: AdsApi, authorize: AdsAuthorizer | undefined): void {
    const { streams, observer, admission, logger: log } = this.deps;
    const peer = call.getPeer();
    // Serving before every registry has synced would hand proxies a partial mesh; make them retry.
    if (!this.deps.ready()) {
      call.emit('error', {
        code: grpc.status.UNAVAILABLE,
        details: 'portolan is not ready: registries still syncing',
      });
      return;
    }
    let closed = false;
    const stream = this.deps.open(api, streams.nextId(), peer, {
      send: (bytes, drained) => {
        if (!closed) call.write(bytes, drained);
      },
      ...((authorize || admission) && {
        admit: (node: NodeInfo) => {
          if (authorize) {
            const verdict = authorize(proxyFromNode(node), call);
            if (verdict && 'code' in verdict) throw new StreamError(verdict.code, verdict.reason);
            if (verdict) stream.peerIdentity = verdict.identity;
          }
          const refusal = admission?.(stream, firstProxy(node));
          if (refusal) throw new StreamError(refusal.code, refusal.reason);
        },
      }),
    });
    const id = stream.id;
    streams.add(stream);
    log.debug({ conn: id, peer, api }, 'ADS stream opened');
    observer.streamOpened?.(stream);
    let identified = false;
    const close = (reason: string): void => {
      if (closed) return;
      closed = true;
      stream.close();
      streams.remove(stream);
      observer.streamClosed?.(stream, reason);
      log.debug({ conn: id, peer, node: stream.proxy?.id, reason }, 'ADS stream closed');
    };
    call.on('data', (bytes: Buffer) => {
      if (closed) return;
      try {
        stream.handleRequest(bytes);
        if (!identified && stream.proxy) {
          identified = true;
          // Per-stream lines are debug: at thousands of streams, synchronous log writes cost seconds.
          log.debug(
            { conn: id, peer, api, node: stream.proxy.id, kind: stream.proxy.kind },
            'ADS stream opened',
          );
          observer.streamIdentified?.(stream);
        }
      } catch (err) {
        const code = err instanceof StreamError ? err.code : grpc.status.INVALID_ARGUMENT;
        const details = err instanceof Error ? err.message : String(err);
        log.warn({ conn: id, peer, code, details }, 'refusing ADS stream');
        close('refused');
        call.emit('error', { code, details });
      }
    });
    call.on('end', () => {
      close('client closed');
      call.end();
    });
    call.on('cancelled', () => close('cancelled'));
    call.on('error', () => close('error'));
  }
}
