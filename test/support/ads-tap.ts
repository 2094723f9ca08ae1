// A loopback gRPC relay in front of an ADS server that records what clients send: every NACK (a
// request carrying error_detail), per stream, SotW and delta. A "no NACK" check must look at what
// the client sent over the whole test; the server's stream state cannot serve, because it clears a
// NACK at the next ACK and forgets it when the stream closes.
import * as grpc from '@grpc/grpc-js';
import { decodeDeltaDiscoveryRequest, decodeDiscoveryRequest } from '../../xds/proto/wire.js';
import { ADS_PATH } from './raw-ads-client.js';
import { DELTA_PATH } from './raw-delta-client.js';

export interface TappedNack {
  readonly api: 'sotw' | 'delta';
  /** The node id of the stream's first request. */
  readonly node: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly message: string;
}

export interface AdsTap {
  /** Where clients connect instead of the ADS server. */
  readonly address: string;
  /** Every NACK sent through the tap so far, in order. */
  readonly nacks: readonly TappedNack[];
  /** Requests relayed so far (ACKs, NACKs and subscriptions). */
  requests(): number;
  stop(): void;
}

const identity = (b: Buffer): Buffer => b;

const method = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: true,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

/** Starts a tap relaying both ADS methods to `upstream` (host:port, plaintext). */
export async function startAdsTap(upstream: string): Promise<AdsTap> {
  const nacks: TappedNack[] = [];
  let requests = 0;
  const client = new grpc.Client(upstream, grpc.credentials.createInsecure());
  const relay =
    (api: 'sotw' | 'delta', path: string) =>
    (down: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
      const up = client.makeBidiStreamRequest(path, identity, identity);
      let node = '';
      down.on('data', (bytes: Buffer) => {
        requests += 1;
        const req = api === 'sotw' ? decodeDiscoveryRequest(bytes) : decodeDeltaDiscoveryRequest(bytes);
        node ||= req.node?.id ?? '';
        if (req.errorDetail)
          nacks.push({
            api,
            node,
            typeUrl: req.typeUrl,
            nonce: req.responseNonce,
            message: req.errorDetail.message,
          });
        up.write(bytes);
      });
      down.on('end', () => up.end());
      down.on('cancelled', () => up.cancel());
      down.on('error', () => up.cancel());
      up.on('data', (bytes: Buffer) => down.write(bytes));
      up.on('error', () => {}); // the status event carries it
      up.on('status', (s: grpc.StatusObject) => {
        if (s.code === grpc.status.OK) down.end();
        else down.emit('error', { code: s.code, details: s.details });
      });
    };
  const server = new grpc.Server();
  server.addService(
    { StreamAggregatedResources: method(ADS_PATH), DeltaAggregatedResources: method(DELTA_PATH) },
    {
      StreamAggregatedResources: relay('sotw', ADS_PATH),
      DeltaAggregatedResources: relay('delta', DELTA_PATH),
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    address: `127.0.0.1:${port}`,
    nacks,
    requests: () => requests,
    stop() {
      server.forceShutdown();
      client.close();
    },
  };
}
