// The limit to compare against (forked by bench/push-scale.ts and bench/proxyless-storm.ts): a
// minimal grpc-js ADS server that answers every subscription (a request without a response nonce;
// ACKs are read and ignored) with a pre-encoded response and, on command, writes one pre-encoded EDS
// response (identical bytes for every stream) to all of its streams. No protocol state, no
// generation, no flow control: what grpc-js itself costs for the same load.
// Arguments: [CLUSTER] [RESPONSES.json]. CLUSTER names the pushed EDS response. RESPONSES.json
// (`{"<type_url> <name>": "<base64 DiscoveryResponse>"}`, responses another server sent) answers a
// subscription to that type and first name with those exact bytes; anything else gets an empty
// response of its type (EDS: the current pushed one).
import * as grpc from '@grpc/grpc-js';
import { encodeResource } from '../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { encodeDiscoveryResponse } from '../../xds/proto/wire.js';
import { readFileSync } from 'node:fs';
import { readRequest } from './wire-lite.js';

export type ToRawServer =
  { readonly cmd: 'push'; readonly addresses: readonly string[] } | { readonly cmd: 'close' };

const identity = (b: Buffer): Buffer => b;
const streams = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();
let nonce = 0;

/** A load assignment for `cluster` with these addresses, as one DiscoveryResponse. */
function edsResponse(cluster: string, addresses: readonly string[]): Buffer {
  const cla = encodeResource(ENDPOINT, cluster, {
    cluster_name: cluster,
    endpoints: [
      {
        locality: { region: '', zone: '', sub_zone: '' },
        load_balancing_weight: { value: addresses.length },
        lb_endpoints: addresses.map((address) => ({
          endpoint: { address: { socket_address: { address, port_value: 9000 } } },
          health_status: 'HEALTHY',
          load_balancing_weight: { value: 1 },
        })),
      },
    ],
  });
  return encodeDiscoveryResponse({
    versionInfo: `v${++nonce}`,
    resources: [cla],
    typeUrl: ENDPOINT,
    nonce: `${nonce}`,
  });
}

const CLUSTER_NAME = process.argv[2] ?? 'outbound|7070||svc-0.bench.internal';
let current = edsResponse(CLUSTER_NAME, ['10.200.0.0']);
const empty = new Map(
  [LISTENER, ROUTE, CLUSTER].map((t) => [
    t,
    encodeDiscoveryResponse({ versionInfo: 'v0', resources: [], typeUrl: t, nonce: '0' }),
  ]),
);

const responsesFile = process.argv[3];
const preEncoded = new Map<string, Buffer>(
  responsesFile
    ? Object.entries(JSON.parse(readFileSync(responsesFile, 'utf8')) as Record<string, string>).map(
        ([key, b64]) => [key, Buffer.from(b64, 'base64')],
      )
    : [],
);

const server = new grpc.Server();
server.addService(
  {
    StreamAggregatedResources: {
      path: '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
      requestStream: true,
      responseStream: true,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  },
  {
    StreamAggregatedResources: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (bytes: Buffer) => {
        const { typeUrl, nonce, name } = readRequest(bytes);
        if (nonce !== '') return;
        const recorded = preEncoded.get(`${typeUrl} ${name}`);
        if (recorded) {
          call.write(recorded);
          return;
        }
        if (typeUrl === ENDPOINT) streams.add(call);
        call.write(typeUrl === ENDPOINT ? current : (empty.get(typeUrl) ?? current));
      });
      const drop = (): void => {
        streams.delete(call);
      };
      call.on('end', () => {
        drop();
        call.end();
      });
      call.on('cancelled', drop);
      call.on('error', drop);
    },
  },
);

server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  process.send?.({ ev: 'listening', port });
});

process.on('message', (msg: ToRawServer) => {
  if (msg.cmd === 'push') {
    current = edsResponse(CLUSTER_NAME, msg.addresses);
    for (const call of streams) call.write(current);
  } else if (msg.cmd === 'close') {
    server.forceShutdown();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
