// A raw incremental ADS client for protocol tests: DeltaDiscoveryRequests out, DeltaDiscoveryResponses
// in, on one DeltaAggregatedResources stream, with bounded waits.
import * as grpc from '@grpc/grpc-js';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeDeltaDiscoveryResponse, encodeDeltaDiscoveryRequest } from '../../xds/proto/wire.js';
import { PROBE_TYPE } from './raw-ads-client.js';

export const DELTA_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';

export type DecodedDeltaResponse = ReturnType<typeof decodeDeltaDiscoveryResponse>;

/** A DeltaDiscoveryRequest in protobufjs object form (snake_case). */
export interface RawDeltaRequest {
  node?: object;
  type_url: string;
  resource_names_subscribe?: string[];
  resource_names_unsubscribe?: string[];
  initial_resource_versions?: Record<string, string>;
  response_nonce?: string;
  error_detail?: { code: number; message: string };
}

const identity = (b: Buffer): Buffer => b;

export class RawDeltaClient {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private readonly queue: DecodedDeltaResponse[] = [];
  private finalStatus: grpc.StatusObject | undefined;
  private sentFirst = false;
  private probes = 0;
  private lastProbe: DecodedDeltaResponse | undefined;

  constructor(address: string) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure());
    this.call = this.client.makeBidiStreamRequest(DELTA_PATH, identity, identity);
    this.call.on('data', (bytes: Buffer) => this.queue.push(decodeDeltaDiscoveryResponse(bytes)));
    this.call.on('status', (s: grpc.StatusObject) => {
      this.finalStatus = s;
    });
    this.call.on('error', () => {});
  }

  send(req: RawDeltaRequest): void {
    this.sentFirst = true;
    this.call.write(encodeDeltaDiscoveryRequest(req));
  }

  ack(res: DecodedDeltaResponse): void {
    this.send({ type_url: res.type_url, response_nonce: res.nonce });
  }

  async next(timeoutMs = 5000): Promise<DecodedDeltaResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = this.queue.shift();
      if (res) return res;
      if (this.finalStatus)
        throw new Error(`stream ended (${this.finalStatus.code}: ${this.finalStatus.details}) while waiting`);
      if (Date.now() >= deadline) throw new Error(`no delta response within ${timeoutMs} ms`);
      await sleep(10);
    }
  }

  /**
   * Fails if the server sent anything the test has not read, as of now: proved by the answer to a
   * probe subscription sent after everything else (PROBE_TYPE, raw-ads-client.ts), before which
   * nothing may come. No time is waited; `timeoutMs` bounds the wait for the answer (at least 5 s).
   */
  async expectSilence(timeoutMs = 5000): Promise<void> {
    const extra = this.queue.shift();
    if (extra) throw new Error(`unexpected delta response: ${extra.type_url} nonce ${extra.nonce}`);
    if (!this.sentFirst) throw new Error('expectSilence: the stream has not sent its first request');
    this.probes += 1;
    this.send({
      type_url: PROBE_TYPE,
      ...(this.lastProbe && { response_nonce: this.lastProbe.nonce }),
      resource_names_subscribe: [`probe-${this.probes}`],
      ...(this.probes > 1 && { resource_names_unsubscribe: [`probe-${this.probes - 1}`] }),
    });
    const answer = await this.next(Math.max(timeoutMs, 5000));
    if (answer.type_url !== PROBE_TYPE)
      throw new Error(`unexpected delta response: ${answer.type_url} nonce ${answer.nonce}`);
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
    if (extra) throw new Error(`unexpected delta response: ${extra.type_url} nonce ${extra.nonce}`);
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }
}

/** name → version of the resources in a delta response. */
export function deltaVersions(res: DecodedDeltaResponse): Record<string, string> {
  return Object.fromEntries(res.resources.map((r) => [r.name, r.version]));
}
