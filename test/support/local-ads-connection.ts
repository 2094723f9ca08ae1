// A local xDS client that holds many ADS streams on one HTTP/2 connection of its own (grpc-js shares
// connections between clients of the same target unless told not to): what a process on an
// enrolled VM can open against the agent, an attacker's or a grpc-go app's (one stream per target).
// Each stream sends its first request at once and records its responses and final status.
import * as grpc from '@grpc/grpc-js';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeDiscoveryResponse, encodeDiscoveryRequest } from '../../xds/proto/wire.js';
import { ADS_PATH, type DecodedResponse, type RawRequest } from './raw-ads-client.js';

const identity = (b: Buffer): Buffer => b;

export interface LocalStreamHandle {
  readonly responses: DecodedResponse[];
  status(): grpc.StatusObject | undefined;
  send(req: RawRequest): void;
  /** The next unread response, waiting up to `timeoutMs`; rejects if the stream ends first. */
  next(timeoutMs?: number): Promise<DecodedResponse>;
  /** The final status, waiting up to `timeoutMs`. */
  ended(timeoutMs?: number): Promise<grpc.StatusObject>;
  cancel(): void;
}

export class LocalAdsConnection {
  private readonly client: grpc.Client;
  private readonly streams: LocalStreamHandle[] = [];

  constructor(address: string) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
    });
  }

  /** A new stream on this connection, its first request sent. */
  open(first: RawRequest): LocalStreamHandle {
    const call = this.client.makeBidiStreamRequest(ADS_PATH, identity, identity);
    const responses: DecodedResponse[] = [];
    let final: grpc.StatusObject | undefined;
    let read = 0;
    call.on('data', (bytes: Buffer) => responses.push(decodeDiscoveryResponse(bytes)));
    call.on('status', (s: grpc.StatusObject) => (final = s));
    call.on('error', () => {}); // the status carries it
    call.write(encodeDiscoveryRequest(first));
    const handle: LocalStreamHandle = {
      responses,
      status: () => final,
      send: (req) => call.write(encodeDiscoveryRequest(req)),
      async next(timeoutMs = 10_000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const res = responses[read];
          if (res) {
            read += 1;
            return res;
          }
          if (final) throw new Error(`stream ended (${final.code}: ${final.details}) before a response`);
          if (Date.now() >= deadline) throw new Error(`no response within ${timeoutMs} ms`);
          await sleep(20);
        }
      },
      async ended(timeoutMs = 10_000) {
        const deadline = Date.now() + timeoutMs;
        while (!final) {
          if (Date.now() >= deadline) throw new Error(`stream did not end within ${timeoutMs} ms`);
          await sleep(20);
        }
        return final;
      },
      cancel: () => call.cancel(),
    };
    this.streams.push(handle);
    return handle;
  }

  close(): void {
    for (const s of this.streams) s.cancel();
    this.client.close();
  }
}

/** A node as a local gRPC app's bootstrap gives it (protobufjs object form), with string metadata. */
export function localNode(
  id: string,
  metadata: Record<string, string> = {},
  labels?: Record<string, string>,
): object {
  const fields: Record<string, object> = Object.fromEntries(
    Object.entries(metadata).map(([k, v]) => [k, { stringValue: v }]),
  );
  if (labels)
    fields.LABELS = {
      structValue: {
        fields: Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, { stringValue: v }])),
      },
    };
  return { id, cluster: 'test', user_agent_name: 'gRPC local-ads-connection', metadata: { fields } };
}
