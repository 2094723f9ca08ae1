// Helpers for the CA tests: an ADS stream over TLS with an optional client certificate, reduced to
// "the first response, or the status the stream ended with".
import * as grpc from '@grpc/grpc-js';
import { decodeDiscoveryResponse, encodeDiscoveryRequest } from '../../xds/proto/wire.js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { ADS_PATH } from '../support/raw-ads-client.js';

export interface ClientTls {
  readonly rootPem: string;
  readonly certChainPem?: string;
  readonly keyPem?: string;
}

export type FirstAnswer =
  | { readonly kind: 'response'; readonly typeUrl: string; readonly resources: number }
  | { readonly kind: 'status'; readonly code: grpc.status; readonly details: string };

const identity = (b: Buffer): Buffer => b;

/** Opens ADS on `address` with `tls`, asks for every cluster as `node`, and reports the first answer. */
export async function firstAdsAnswer(
  address: string,
  tls: ClientTls,
  node: { id: string; metadata: Record<string, string> },
  timeoutMs = 10_000,
): Promise<FirstAnswer> {
  const creds = grpc.credentials.createSsl(
    Buffer.from(tls.rootPem),
    tls.keyPem ? Buffer.from(tls.keyPem) : null,
    tls.certChainPem ? Buffer.from(tls.certChainPem) : null,
  );
  const client = new grpc.Client(address, creds);
  const call = client.makeBidiStreamRequest(ADS_PATH, identity, identity, new grpc.Metadata(), {
    deadline: Date.now() + timeoutMs,
  });
  try {
    return await new Promise<FirstAnswer>((resolve) => {
      call.on('data', (bytes: Buffer) => {
        const res = decodeDiscoveryResponse(bytes);
        resolve({ kind: 'response', typeUrl: res.type_url, resources: res.resources.length });
      });
      call.on('status', (s: grpc.StatusObject) =>
        resolve({ kind: 'status', code: s.code, details: s.details }),
      );
      call.on('error', () => {});
      call.write(
        encodeDiscoveryRequest({
          node: {
            id: node.id,
            cluster: 'vm',
            user_agent_name: 'gRPC ca-test',
            metadata: {
              fields: Object.fromEntries(
                Object.entries(node.metadata).map(([k, v]) => [k, { stringValue: v }]),
              ),
            },
          },
          type_url: CLUSTER,
          resource_names: [],
        }),
      );
    });
  } finally {
    call.cancel();
    client.close();
  }
}

export interface OpenAdsStream {
  /** Every response so far (type URL and resource count). */
  readonly responses: { readonly typeUrl: string; readonly resources: number }[];
  /** Resolves with the status the stream ends with. */
  readonly ended: Promise<grpc.StatusObject>;
  /** Whether the stream has ended. */
  readonly isEnded: () => boolean;
  close(): void;
}

/** Opens ADS on `address` with `tls` as `node`, asks for every cluster, and keeps the stream open. */
export function openAdsStream(
  address: string,
  tls: ClientTls,
  node: { id: string; metadata: Record<string, string> },
): OpenAdsStream {
  const creds = grpc.credentials.createSsl(
    Buffer.from(tls.rootPem),
    tls.keyPem ? Buffer.from(tls.keyPem) : null,
    tls.certChainPem ? Buffer.from(tls.certChainPem) : null,
  );
  const client = new grpc.Client(address, creds);
  const call = client.makeBidiStreamRequest(ADS_PATH, identity, identity, new grpc.Metadata());
  const responses: { typeUrl: string; resources: number }[] = [];
  let ended = false;
  call.on('data', (bytes: Buffer) => {
    const res = decodeDiscoveryResponse(bytes);
    responses.push({ typeUrl: res.type_url, resources: res.resources.length });
    call.write(
      encodeDiscoveryRequest({
        type_url: res.type_url,
        version_info: res.version_info,
        response_nonce: res.nonce,
        resource_names: [],
      }),
    );
  });
  call.on('error', () => {});
  const status = new Promise<grpc.StatusObject>((resolve) =>
    call.on('status', (s: grpc.StatusObject) => {
      ended = true;
      resolve(s);
    }),
  );
  call.write(
    encodeDiscoveryRequest({
      node: {
        id: node.id,
        cluster: 'vm',
        user_agent_name: 'gRPC ca-test',
        metadata: {
          fields: Object.fromEntries(Object.entries(node.metadata).map(([k, v]) => [k, { stringValue: v }])),
        },
      },
      type_url: CLUSTER,
      resource_names: [],
    }),
  );
  return {
    responses,
    ended: status,
    isEnded: () => ended,
    close() {
      call.cancel();
      client.close();
    },
  };
}
