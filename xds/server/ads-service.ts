// envoy.service.discovery.v3.AggregatedDiscoveryService on @grpc/grpc-js: the method table, and
// each call's life as a stream — refused until the discovery has synced, refused at once when the
// peer is not authenticated (secure port) or already holds its share of streams, ended when no
// request arrives in time, registered while open, fed its requests in order, ended (with a gRPC
// status) on a request the stream refuses.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log/logger.js';
import type { Proxy } from '../proxy/proxy.js';
import { StreamError, type AdsApi, type AdsStream, type StreamCall } from './ads-stream.js';
import { readMessages } from './message-reader.js';
import { MessageWriter } from './message-writer.js';
import type { AdsObserver, RefusalReason, StreamView } from './observer.js';
import { PeerStreams, remoteAddress, type StreamLimits } from './stream-limits.js';
import type { StreamRegistry } from './stream-registry.js';
import type { PingPolicy } from './transport-limits.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const DELTA_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';

const identity = (b: Buffer): Buffer => b;

/** A bidirectional method whose messages stay raw bytes (Portolan encodes and decodes them itself). */
export const bidi = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
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
  stream: StreamView,
  proxy: Proxy,
) => { code: grpc.status; reason: string } | undefined;

/**
 * Decides, as a stream opens and before it is registered, who its peer is: a key its streams are
 * counted under (the SPIFFE identity on the secure port), or a refusal (no verified certificate).
 */
export type PeerAuthenticator = (
  call: AdsCall,
) => { readonly ok: true; readonly key: string } | { readonly ok: false; readonly reason: string };

export interface AdsServiceDeps {
  /** Whether every registry has synced; until then streams are refused. */
  readonly ready: () => boolean;
  readonly streams: StreamRegistry;
  /** A new stream of the variant the client called. */
  readonly open: (api: AdsApi, id: string, peer: string, call: StreamCall) => AdsStream;
  readonly observer: AdsObserver;
  readonly admission?: StreamAdmission;
  readonly logger: Logger;
  readonly limits: StreamLimits;
  /** Enforces the keepalive ping policy on each connection that carries a stream. */
  readonly pings?: PingPolicy;
  /** The largest request message read (the transport limit grpc-js enforces on its own path). */
  readonly maxReceiveMessageBytes: number;
}

/** Picks streams to close by their call (its TLS peer); see AdsService.closeStreams. */
export type StreamSelector = (call: AdsCall) => boolean;

export class AdsService {
  /** How to end each open stream from outside, by its call. */
  private readonly enders = new Map<
    AdsStream,
    { readonly call: AdsCall; end(code: grpc.status, details: string): void }
  >();

  constructor(private readonly deps: AdsServiceDeps) {}

  /**
   * Ends every open stream whose call `select` picks, with `code` and `details` as its status (the
   * CA closes the streams of a revoked certificate this way); returns how many.
   */
  closeStreams(select: StreamSelector, code: grpc.status, details: string): number {
    let closed = 0;
    for (const ender of [...this.enders.values()]) {
      if (!select(ender.call)) continue;
      ender.end(code, details);
      closed += 1;
    }
    return closed;
  }

  /**
   * Serves ADS on `server`. With `authenticate`, a stream whose peer is not authenticated is refused
   * as it opens, and streams are counted per authenticated identity (else per remote address); with
   * `authorize`, each stream's first node is checked before anything is sent.
   */
  register(server: grpc.Server, authorize?: AdsAuthorizer, authenticate?: PeerAuthenticator): void {
    // Counted per server: a peer's plaintext streams do not use up its secure-port share.
    const peers = new PeerStreams(this.deps.limits.maxStreamsPerPeer);
    const serve = (api: AdsApi) => (call: AdsCall) => this.serve(call, api, peers, authorize, authenticate);
    server.addService(ADS_SERVICE, {
      StreamAggregatedResources: serve('sotw'),
      DeltaAggregatedResources: serve('delta'),
    });
  }

  private serve(
    call: AdsCall,
    api: AdsApi,
    peers: PeerStreams,
    authorize: AdsAuthorizer | undefined,
    authenticate: PeerAuthenticator | undefined,
  ): void {
    const { streams, observer, admission, logger: log, limits } = this.deps;
    const peer = call.getPeer();
    // Refusals at open cost nothing but the status: no stream object, no registration, no log line
    // above debug (a client can open thousands); the metric counts them.
    const refuse = (reason: RefusalReason, code: grpc.status, details: string): void => {
      observer.streamRefused?.(reason);
      log.debug({ peer, reason, details }, 'refusing ADS stream');
      call.emit('error', { code, details });
    };
    // Serving before every registry has synced would hand proxies a partial mesh; make them retry.
    if (!this.deps.ready()) {
      call.emit('error', {
        code: grpc.status.UNAVAILABLE,
        details: 'portolan is not ready: registries still syncing',
      });
      return;
    }
    let key = remoteAddress(peer);
    if (authenticate) {
      const who = authenticate(call);
      if (!who.ok) return refuse('unauthenticated', grpc.status.UNAUTHENTICATED, who.reason);
      key = who.key;
    }
    if (!peers.take(key))
      return refuse(
        'peer-limit',
        grpc.status.RESOURCE_EXHAUSTED,
        `${key} already holds ${limits.maxStreamsPerPeer} ADS streams (--max-streams-per-peer)`,
      );
    const writer = new MessageWriter(call);
    this.deps.pings?.watch(writer.session);
    let closed = false;
    const stream = this.deps.open(api, streams.nextId(), peer, {
      send: (message, drained) => {
        if (!closed) writer.write(message, drained);
      },
      // Present (maybe undefined) on every call object: one shape for the per-response `send`.
      admit:
        authorize || admission
          ? (proxy: Proxy) => {
              if (authorize) {
                const verdict = authorize(proxy, call);
                if (verdict && 'code' in verdict) throw new StreamError(verdict.code, verdict.reason);
                if (verdict) stream.peerIdentity = verdict.identity;
              }
              const refusal = admission?.(stream, proxy);
              if (refusal) throw new StreamError(refusal.code, refusal.reason);
            }
          : undefined,
    });
    const id = stream.id;
    streams.add(stream);
    // Per-stream lines are debug, and their fields are not even made unless debug is on: thousands
    // of streams open at once.
    if (log.isLevelEnabled('debug')) log.debug({ conn: id, peer, api }, 'ADS stream opened');
    observer.streamOpened?.(stream);
    let identified = false;
    let firstRequest: NodeJS.Timeout | undefined = setTimeout(() => {
      if (closed) return;
      observer.streamRefused?.('first-request-timeout');
      log.debug({ conn: id, peer }, 'ending ADS stream: no request in time');
      close('no first request');
      call.emit('error', {
        code: grpc.status.DEADLINE_EXCEEDED,
        details: `no request within ${limits.firstRequestTimeoutMs} ms of opening the stream (--first-request-timeout)`,
      });
    }, limits.firstRequestTimeoutMs);
    firstRequest.unref();
    const close = (reason: string): void => {
      if (closed) return;
      closed = true;
      clearTimeout(firstRequest);
      peers.release(key);
      this.enders.delete(stream);
      stream.close();
      streams.remove(stream);
      observer.streamClosed?.(stream, reason);
      if (log.isLevelEnabled('debug'))
        log.debug({ conn: id, peer, node: stream.proxy?.id, reason }, 'ADS stream closed');
    };
    this.enders.set(stream, {
      call,
      end: (code, details) => {
        if (closed) return;
        log.info({ conn: id, peer, node: stream.proxy?.id, code, details }, 'closing ADS stream');
        close(details);
        call.emit('error', { code, details });
      },
    });
    const refuseRequest = (code: grpc.status, details: string): void => {
      log.warn({ conn: id, peer, node: stream.proxy?.id, code, details }, 'refusing ADS stream');
      close('refused');
      call.emit('error', { code, details });
    };
    const onRequest = (bytes: Buffer): void => {
      if (closed) return;
      if (firstRequest) {
        clearTimeout(firstRequest);
        firstRequest = undefined;
      }
      try {
        stream.handleRequest(bytes);
        if (!identified && stream.proxy) {
          identified = true;
          // Per-stream lines are debug: at thousands of streams, synchronous log writes cost seconds.
          if (log.isLevelEnabled('debug'))
            log.debug(
              { conn: id, peer, api, node: stream.proxy.id, kind: stream.proxy.kind },
              'ADS stream opened',
            );
          observer.streamIdentified?.(stream);
        }
      } catch (err) {
        if (err instanceof StreamError && err.refusal) observer.streamRefused?.(err.refusal);
        refuseRequest(
          err instanceof StreamError ? err.code : grpc.status.INVALID_ARGUMENT,
          err instanceof Error ? err.message : String(err),
        );
      }
    };
    readMessages(call, this.deps.maxReceiveMessageBytes, onRequest, (code, details) => {
      if (!closed) refuseRequest(code, details);
    });
    call.on('end', () => {
      close('client closed');
      call.end();
    });
    call.on('cancelled', () => close('cancelled'));
    call.on('error', () => close('error'));
  }
}
