// Shared setup for the consul-* integration tests: the stand-in Consul, the consul registry reading
// it, the in-process plane serving it, and a raw ADS client that records every CDS and EDS response
// it gets (ACKing each), so a test can assert what a client saw during a fault.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { WatchPacing } from '../../adapters/consul/blocking-watch.js';
import { createConsulClient } from '../../adapters/consul/client.js';
import { ConsulRegistry } from '../../adapters/consul/registry.js';
import { silentLogger } from '../../log/logger.js';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';
import { ConsulStandin, type StandinOptions } from '../support/consul-standin.js';
import type { DecodedLoadAssignment } from '../support/decoded-xds.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import {
  decodedResources,
  grpcNode,
  RawAdsClient,
  resourceNames,
  type DecodedResponse,
} from '../support/raw-ads-client.js';

/** Fast enough for tests: short backoff and a loose rate limit. */
export const TEST_PACING: WatchPacing = {
  backoff: { initialMs: 50, maxMs: 400, jitter: 0.5 },
  rateLimit: { burst: 3, intervalMs: 50 },
};

export interface ConsulPlane {
  readonly standin: ConsulStandin;
  readonly registry: ConsulRegistry;
  readonly plane: InProcessPlane;
}

export async function startConsulPlane(
  t: TestContext,
  {
    waitMs = 400,
    pacing = TEST_PACING,
    standin: standinOptions = {},
    seed,
  }: {
    waitMs?: number;
    pacing?: WatchPacing;
    standin?: StandinOptions;
    /** Registers instances before the registry's first sync. */
    seed?: (standin: ConsulStandin) => void;
  } = {},
): Promise<ConsulPlane> {
  const standin = await ConsulStandin.start(standinOptions);
  seed?.(standin);
  const registry = new ConsulRegistry({
    client: createConsulClient({
      url: new URL(standin.url),
      waitMs,
      ...(standinOptions.aclToken && { token: standinOptions.aclToken }),
    }),
    conversion: { domain: 'service.consul', warningHealthy: true, datacenter: 'dc1' },
    logger: silentLogger,
    pacing,
  });
  const plane = await startInProcessPlane({ extraRegistries: [registry] });
  t.after(async () => {
    await plane.stop();
    await standin.stop();
  });
  return { standin, registry, plane };
}

export function clusterOf(service: string, port: number): string {
  return `outbound|${port}||${service}.service.consul`;
}

export interface EndpointView {
  readonly address: string;
  readonly port: number;
  readonly health: string;
  readonly weight: number;
}

/** What one EDS or CDS response said, in arrival order. */
export interface Seen {
  readonly type: 'CDS' | 'EDS';
  readonly at: number;
  /** CDS: cluster names; EDS: cluster → endpoints. */
  readonly clusters: ReadonlyMap<string, readonly EndpointView[]>;
}

/** A raw ADS client subscribed to every cluster (CDS wildcard) and to the EDS of `clusters`. */
export class XdsRecorder {
  readonly seen: Seen[] = [];
  private closed = false;
  private readonly pumping: Promise<void>;

  private constructor(
    private readonly client: RawAdsClient,
    private readonly clusters: string[],
  ) {
    this.pumping = this.pump();
  }

  static async connect(address: string, nodeId: string, clusters: string[]): Promise<XdsRecorder> {
    const client = new RawAdsClient(address);
    client.send({ node: grpcNode(nodeId), type_url: CLUSTER, resource_names: [] });
    const cds = await client.next(10_000);
    client.ack(cds);
    client.send({ type_url: ENDPOINT, resource_names: clusters });
    const recorder = new XdsRecorder(client, clusters);
    recorder.record(cds);
    return recorder;
  }

  /** The endpoints of `cluster` in the latest EDS response that had it. */
  latest(cluster: string): readonly EndpointView[] | undefined {
    for (let i = this.seen.length - 1; i >= 0; i--) {
      const s = this.seen[i];
      if (s?.type === 'EDS' && s.clusters.has(cluster)) return s.clusters.get(cluster);
    }
    return undefined;
  }

  /** Waits until `cluster`'s endpoints satisfy `check`. */
  async waitFor(
    cluster: string,
    check: (endpoints: readonly EndpointView[]) => boolean,
    timeoutMs = 10_000,
  ): Promise<readonly EndpointView[]> {
    return eventually(
      () => {
        const endpoints = this.latest(cluster);
        assert.ok(
          endpoints && check(endpoints),
          `${cluster} did not reach the expected state; last: ${JSON.stringify(endpoints)}`,
        );
        return endpoints;
      },
      { timeoutMs, intervalMs: 10 },
    );
  }

  /**
   * Asserts that from `from` on, every CDS response still had `cluster` and every EDS response had
   * it with at least `min` endpoints: the client was never handed an empty (or shrunk) set.
   */
  assertNeverBelow(cluster: string, min: number, from = 0): void {
    for (const s of this.seen.slice(from)) {
      assert.ok(s.clusters.has(cluster), `a ${s.type} response without ${cluster}`);
      if (s.type === 'EDS') {
        const n = s.clusters.get(cluster)?.length ?? 0;
        assert.ok(n >= min, `an EDS response with ${n} endpoints for ${cluster} (expected ≥ ${min})`);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.client.close();
    await this.pumping;
  }

  private async pump(): Promise<void> {
    while (!this.closed) {
      let res: DecodedResponse;
      try {
        res = await this.client.next(200);
      } catch (err) {
        if (this.closed || /stream ended/.test(String(err))) return;
        continue;
      }
      this.record(res);
      this.client.ack(res, res.type_url === ENDPOINT ? this.clusters : []);
    }
  }

  private record(res: DecodedResponse): void {
    if (res.type_url === CLUSTER) {
      this.seen.push({
        type: 'CDS',
        at: performance.now(),
        clusters: new Map(resourceNames(res).map((n) => [n, []])),
      });
    } else if (res.type_url === ENDPOINT) {
      const clusters = new Map<string, EndpointView[]>();
      for (const cla of decodedResources<DecodedLoadAssignment>(res)) {
        clusters.set(
          cla.cluster_name ?? '',
          (cla.endpoints ?? []).flatMap((g) =>
            (g.lb_endpoints ?? []).map((e) => ({
              address: e.endpoint?.address?.socket_address?.address ?? '',
              port: e.endpoint?.address?.socket_address?.port_value ?? 0,
              health: e.health_status ?? 'UNKNOWN',
              weight: e.load_balancing_weight?.value ?? 0,
            })),
          ),
        );
      }
      this.seen.push({ type: 'EDS', at: performance.now(), clusters });
    }
  }
}

export function addresses(endpoints: readonly EndpointView[] | undefined): string[] {
  return (endpoints ?? []).map((e) => e.address).sort();
}
