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

/**
 * A type no generator serves: the quiet checks subscribe to one name of it at a time, and the server
 * answers each (empty). It is never pushed, and it comes after every xDS type in a stream's push
 * order (xds/proto/type-urls.ts PUSH_ORDER), so its answer proves that whatever the earlier requests
 * and the pushes handed out before it left pending on the stream has been built and sent, or found
 * to be nothing.
 */
export const PROBE_TYPE = 'type.googleapis.com/portolan.test.v1.QuietProbe';

export function grpcNode(id: string): object {
  return { id, cluster: 'test', user_agent_name: 'gRPC raw-ads-client' };
}

const identity = (b: Buffer): Buffer => b;

export class RawAdsClient {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private readonly queue: DecodedResponse[] = [];
  private finalStatus: grpc.StatusObject | undefined;
  private sentFirst = false;
  private probes = 0;
  private lastProbe: DecodedResponse | undefined;

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
    this.sentFirst = true;
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

  /**
   * Fails if the server sent anything the test has not read, as of now: everything this stream sent
   * before, and every push handed out before (wait for a push with PushProgress first), is proved
   * processed by the answer to a probe request sent after it (PROBE_TYPE), and nothing may come
   * before that answer. No time is waited; `timeoutMs` bounds the wait for the answer (the number
   * the callers used to pass as a settling time is read as that bound, at least 5 s).
   */
  async expectSilence(timeoutMs = 5000): Promise<void> {
    const extra = this.queue.shift();
    if (extra) throw new Error(`unexpected response: ${describe(extra)}`);
    const answer = await this.probe(Math.max(timeoutMs, 5000));
    if (answer.type_url !== PROBE_TYPE) throw new Error(`unexpected response: ${describe(answer)}`);
    this.lastProbe = answer;
  }

  /**
   * Fails if a response arrives within `ms`. Weaker than expectSilence, which it does not replace:
   * it does not prove the input was processed. Only for a server that does not answer the probe
   * type (the agent's local xDS proxy serves the xDS types alone).
   */
  async expectNoResponseWithin(ms: number): Promise<void> {
    await sleep(ms);
    const extra = this.queue.shift();
    if (extra) throw new Error(`unexpected response: ${describe(extra)}`);
  }

  /** Subscribes to one new probe name (ACKing the previous probe answer) and reads the next response. */
  private probe(timeoutMs: number): Promise<DecodedResponse> {
    if (!this.sentFirst) throw new Error('expectSilence: the stream has not sent its first request');
    this.probes += 1;
    this.send({
      type_url: PROBE_TYPE,
      version_info: this.lastProbe?.version_info ?? '',
      response_nonce: this.lastProbe?.nonce ?? '',
      resource_names: [`probe-${this.probes}`],
    });
    return this.next(timeoutMs);
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

function describe(res: DecodedResponse): string {
  return `${res.type_url} version ${res.version_info} nonce ${res.nonce}`;
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
