// The consul registry against the stand-in Consul (test/support/consul-standin.ts), in process:
//  1. Idle cost: HTTP requests per minute to Consul with N idle services. One blocking watch per
//     service plus one on the service list, each re-armed once per `wait` (+ Consul's jitter of up to
//     wait/16): expected ≈ (N + 2) per wait, i.e. flat per service.
//  2. Change latency: a Consul write (a TTL check failing, through the HTTP API) → the EDS update
//     with the endpoint UNHEALTHY at a raw ADS client, with 1,000 services registered.
import * as grpc from '@grpc/grpc-js';
import { DEFAULT_PACING } from '../adapters/consul/blocking-watch.js';
import { createConsulClient } from '../adapters/consul/client.js';
import { ConsulRegistry } from '../adapters/consul/registry.js';
import { silentLogger } from '../log/logger.js';
import { ConsulStandin } from '../test/support/consul-standin.js';
import type { DecodedLoadAssignment } from '../test/support/decoded-xds.js';
import { eventually } from '../test/support/eventually.js';
import { startInProcessPlane } from '../test/support/in-process.js';
import { ADS_PATH, decodedResources, grpcNode } from '../test/support/raw-ads-client.js';
import { CLUSTER, ENDPOINT } from '../xds/proto/type-urls.js';
import { decodeDiscoveryResponse, encodeDiscoveryRequest } from '../xds/proto/wire.js';
import { percentile, printTable } from './table.js';

const IDLE_WAIT_MS = 5_000;
const IDLE_WAITS = 6;
const LATENCY_SERVICES = 1000;
const CHANGES = 120;
const BACK_TO_BACK = 10;

export async function consulBench(): Promise<void> {
  const idle = [];
  for (const n of [100, 1000]) idle.push(await idleRequests(n));
  printTable(
    `Consul requests at idle (stand-in Consul in process; --consul-wait ${IDLE_WAIT_MS / 1000}s, measured over ${IDLE_WAITS} waits after the first sync; default pacing; Consul adds up to wait/16 to each wait). Per wait ≈ services + 2 (each service, Consul's own \`consul\` service, the service list).`,
    idle,
  );
  const latency = [];
  for (const pushWindowMs of [0, 100]) latency.push(await changeLatency(pushWindowMs));
  printTable(
    `Consul change → EDS at the client (ms): a TTL check failed through the HTTP API until a raw ADS client has the endpoint UNHEALTHY. ${LATENCY_SERVICES} services; each change on another service (rate limit: burst ${DEFAULT_PACING.rateLimit.burst}, then 1 per ${DEFAULT_PACING.rateLimit.intervalMs} ms per watch).`,
    latency,
  );
}

function services(n: number): { Name: string; ID: string; Address: string; Port: number }[] {
  return Array.from({ length: n }, (_, i) => ({
    Name: `svc-${i}`,
    ID: `svc-${i}`,
    Address: `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`,
    Port: 9000,
  }));
}

async function startRegistry(standin: ConsulStandin, waitMs: number): Promise<ConsulRegistry> {
  const registry = new ConsulRegistry({
    client: createConsulClient({ url: new URL(standin.url), waitMs }),
    conversion: { domain: 'service.consul', warningHealthy: true, datacenter: 'dc1' },
    logger: silentLogger,
  });
  await registry.start();
  await eventually(
    () => {
      if (!registry.hasSynced()) throw new Error('not synced');
    },
    { timeoutMs: 120_000 },
  );
  return registry;
}

async function idleRequests(n: number): Promise<Record<string, string>> {
  const standin = await ConsulStandin.start({ maxConnsPerClient: n + 100 });
  standin.registerMany(services(n));
  const registry = await startRegistry(standin, IDLE_WAIT_MS);
  try {
    await eventually(
      () => {
        if (standin.pendingReads < n + 2) throw new Error('watches not all parked');
      },
      { timeoutMs: 60_000 },
    );
    // The watches re-arm together (they started together); start and end the window half a wait
    // off those bursts so that it counts whole periods.
    await new Promise((r) => setTimeout(r, IDLE_WAIT_MS / 2));
    standin.resetCounts();
    const started = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_WAITS * IDLE_WAIT_MS));
    const minutes = (performance.now() - started) / 60_000;
    const requests = standin.counts.catalog + standin.counts.health;
    const perWait = requests / IDLE_WAITS;
    return {
      services: String(n),
      'requests/min': (requests / minutes).toFixed(0),
      'requests/min/service': (requests / minutes / (n + 1)).toFixed(2),
      'requests per wait': perWait.toFixed(0),
      'per wait per watch': (perWait / (n + 2)).toFixed(2),
      'at the default 60s wait, requests/min': ((requests / minutes) * (IDLE_WAIT_MS / 60_000)).toFixed(0),
    };
  } finally {
    await registry.stop();
    await standin.stop();
  }
}

async function changeLatency(pushWindowMs: number): Promise<Record<string, string>> {
  const standin = await ConsulStandin.start({ maxConnsPerClient: LATENCY_SERVICES + 100 });
  standin.registerMany(services(LATENCY_SERVICES));
  const registry = await startRegistry(standin, 60_000);
  const plane = await startInProcessPlane({ extraRegistries: [registry], pushWindowMs });
  const clusters = Array.from({ length: CHANGES }, (_, i) => `outbound|9000||svc-${i}.service.consul`);
  const eds = new EdsStream(plane.address, clusters);
  try {
    await Promise.all(clusters.map((c) => eds.until(c, (h) => h === 'HEALTHY')));
    const spread: number[] = [];
    for (let i = 0; i < CHANGES; i++) spread.push(await change(standin, eds, i, clusters[i] ?? '', 'fail'));
    // Back to back on one service: after the burst, the watch's rate limit paces it.
    const same: number[] = [];
    for (let i = 0; i < BACK_TO_BACK; i++)
      same.push(await change(standin, eds, 0, clusters[0] ?? '', i % 2 === 0 ? 'pass' : 'fail'));
    const s = [...spread].sort((a, b) => a - b);
    const b = [...same].sort((a, b2) => a - b2);
    return {
      'push window ms': String(pushWindowMs),
      changes: String(CHANGES),
      'p50 ms': percentile(s, 50).toFixed(1),
      'p99 ms': percentile(s, 99).toFixed(1),
      'max ms': (s[s.length - 1] ?? NaN).toFixed(1),
      [`one service ×${BACK_TO_BACK} back to back: p50 / max ms`]: `${percentile(b, 50).toFixed(0)} / ${(b[b.length - 1] ?? NaN).toFixed(0)}`,
    };
  } finally {
    eds.close();
    await plane.stop();
    await standin.stop();
  }
}

async function change(
  standin: ConsulStandin,
  eds: EdsStream,
  i: number,
  cluster: string,
  verb: 'pass' | 'fail',
): Promise<number> {
  const expected = verb === 'fail' ? 'UNHEALTHY' : 'HEALTHY';
  const arrived = eds.until(cluster, (h) => h === expected);
  const started = performance.now();
  const res = await fetch(`${standin.url}/v1/agent/check/${verb}/service:svc-${i}`, { method: 'PUT' });
  if (res.status !== 200) throw new Error(`check ${verb}: ${res.status}`);
  await res.text();
  await arrived;
  return performance.now() - started;
}

/** A raw ADS stream (CDS wildcard + EDS of `clusters`) that resolves waiters as responses arrive. */
class EdsStream {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private readonly health = new Map<string, string>();
  private waiters: { cluster: string; check: (h: string) => boolean; resolve: () => void }[] = [];

  constructor(address: string, clusters: string[]) {
    const identity = (b: Buffer): Buffer => b;
    this.client = new grpc.Client(address, grpc.credentials.createInsecure());
    this.call = this.client.makeBidiStreamRequest(ADS_PATH, identity, identity);
    this.call.on('error', () => {});
    this.call.on('data', (bytes: Buffer) => {
      const res = decodeDiscoveryResponse(bytes);
      this.call.write(
        encodeDiscoveryRequest({
          type_url: res.type_url,
          version_info: res.version_info,
          response_nonce: res.nonce,
          resource_names: res.type_url === ENDPOINT ? clusters : [],
        }),
      );
      if (res.type_url !== ENDPOINT) return;
      for (const cla of decodedResources<DecodedLoadAssignment>(res)) {
        const h = cla.endpoints?.[0]?.lb_endpoints?.[0]?.health_status;
        if (cla.cluster_name && h) this.health.set(cla.cluster_name, h);
      }
      this.waiters = this.waiters.filter((w) => {
        const h = this.health.get(w.cluster);
        if (h === undefined || !w.check(h)) return true;
        w.resolve();
        return false;
      });
    });
    this.call.write(
      encodeDiscoveryRequest({ node: grpcNode('consul-bench'), type_url: CLUSTER, resource_names: [] }),
    );
    this.call.write(encodeDiscoveryRequest({ type_url: ENDPOINT, resource_names: clusters }));
  }

  /** Resolves when `cluster`'s first endpoint's health satisfies `check` (now or in a later response). */
  until(cluster: string, check: (health: string) => boolean): Promise<void> {
    const h = this.health.get(cluster);
    if (h !== undefined && check(h)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ cluster, check, resolve }));
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }
}
