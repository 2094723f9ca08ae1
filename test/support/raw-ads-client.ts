// A raw ADS client for protocol tests: writes DiscoveryRequests and reads DiscoveryResponses on one
// StreamAggregatedResources stream, with bounded waits for the next response or the final status.
import * as grpc from '@grpc/grpc-js';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeAny } from '../../xds/proto/protos.js';
import { decodeDiscoveryResponse, encodeDiscoveryRequest } from '../../xds/proto/wire.js';

export const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

export type DecodedResponse = ReturnType<typeof decodeDiscoveryResponse>;

/** A DiscoveryRequest in protobufjs object form (snake_case). */
export interface RawRequest {
  version_info?: string;
  node?: object;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code: number; message: string };
}

export function grpcNode(id: string): object {
  return { id, cluster: 'test', user_agent_name: 'gRPC raw-ads-client' };
}

const identity = (b: Buffer): Buffer => b;

export class RawAdsClient {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private readonly queue: DecodedResponse[] = [];
  private finalStatus: grpc.StatusObject | undefined;

  /** `options`: e.g. a private subchannel pool, for a connection of its own. */
  constructor(address: string, options: grpc.ChannelOptions = {}) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), options);
    this.call = this.client.makeBidiStreamRequest(ADS_PATH, identity, identity);
    this.call.on('data', (bytes: Buffer) => this.queue.push(decodeDiscoveryResponse(bytes)));
    this.call.on('status', (s: grpc.StatusObject) => {
      this.finalStatus = s;
    });
    this.call.on('error', () => {}); // the status event carries it
  }

  send(req: RawRequest): void {
    this.call.write(encodeDiscoveryRequest(req));
  }

  sendBytes(bytes: Buffer): void {
    this.call.write(bytes);
  }

  /** ACKs `res`, optionally changing the subscribed names. */
  ack(res: DecodedResponse, names: string[] = []): void {
    this.send({
      type_url: res.type_url,
      version_info: res.version_info,
      response_nonce: res.nonce,
      resource_names: names,
    });
  }

  /** The next response, or a rejection after `timeoutMs`. */
  async next(timeoutMs = 5000): Promise<DecodedResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = this.queue.shift();
      if (res) return res;
      if (this.finalStatus)
        throw new Error(
          `stream ended (${this.finalStatus.code}: ${this.finalStatus.details}) while waiting for a response`,
        );
      if (Date.now() >= deadline) throw new Error(`no response within ${timeoutMs} ms`);
      await sleep(10);
    }
  }

  /** Fails if any response arrives within `ms`. */
  async expectSilence(ms = 300): Promise<void> {
    await sleep(ms);
    const extra = this.queue.shift();
    if (extra)
      throw new Error(
        `unexpected response: ${extra.type_url} version ${extra.version_info} nonce ${extra.nonce}`,
      );
  }

  /** The stream's final status, or a rejection after `timeoutMs`. */
  async status(timeoutMs = 5000): Promise<grpc.StatusObject> {
    const deadline = Date.now() + timeoutMs;
    while (!this.finalStatus) {
      if (Date.now() >= deadline) throw new Error(`stream did not end within ${timeoutMs} ms`);
      await sleep(10);
    }
    return this.finalStatus;
  }

  /** Stops reading from the stream (HTTP/2 flow control then holds the server back). */
  pause(): void {
    this.call.pause();
  }

  resume(): void {
    this.call.resume();
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }
}

/** The resources of a response, decoded as `T` (nested Anys expanded; see decoded-xds.ts). */
export function decodedResources<T = Record<string, unknown>>(res: DecodedResponse): T[] {
  return res.resources.map((r) => decodeAny(r.type_url, r.value) as T);
}

/** Names of the resources in a response (`name`, or `cluster_name` for load assignments). */
export function resourceNames(res: DecodedResponse): string[] {
  return decodedResources<{ name?: string; cluster_name?: string }>(res).map(
    (r) => r.name ?? r.cluster_name ?? '',
  );
}
