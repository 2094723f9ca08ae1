// Warm start: `portolan serve` starting from a store that holds 1,000 services × 10 endpoints —
// how long until /ready answers 200 and a client's wildcard CDS holds every cluster.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../log/logger.js';
import type { Endpoint } from '../model/endpoint.js';
import type { Service } from '../model/service.js';
import { Store } from '../store/store.js';
import { CLUSTER } from '../xds/proto/type-urls.js';
import { eventually } from '../test/support/eventually.js';
import { endpoint, service, servicePort } from '../test/support/model-fixtures.js';
import { startPortolanProcess } from '../test/support/portolan-process.js';
import { RawAdsClient, grpcNode } from '../test/support/raw-ads-client.js';
import { printTable, summarize } from './table.js';

const SERVICES = 1000;
const ENDPOINTS = 10;
const RUNS = 5;

function seed(dataDir: string): void {
  const services = new Map<string, Service>();
  const endpoints = new Map<string, Endpoint[]>();
  for (let s = 0; s < SERVICES; s++) {
    const host = `svc-${s}.warm.internal`;
    services.set(host, service(host, [servicePort('grpc', 7000)]));
    endpoints.set(
      host,
      Array.from({ length: ENDPOINTS }, (_, e) =>
        endpoint(`127.${(s >> 8) & 255}.${s & 255}.${e + 1}`, { grpc: 7000 }),
      ),
    );
  }
  const store = Store.open({ dataDir, logger: silentLogger });
  store.snapshots.save('mock', { services, endpoints }, new Date().toISOString());
  store.close();
}

export async function warmStart(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-warm-'));
  const ready: number[] = [];
  const cds: number[] = [];
  try {
    seed(dir);
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', dir]);
      try {
        await eventually(
          async () => {
            if ((await fetch(`${p.httpBase}/ready`)).status !== 200) throw new Error('not ready');
          },
          { intervalMs: 5 },
        );
        ready.push(performance.now() - started);
        const client = new RawAdsClient(p.xdsAddress);
        try {
          client.send({ node: grpcNode('warm-bench'), type_url: CLUSTER, resource_names: [] });
          const res = await client.next(30_000);
          if (res.resources.length !== SERVICES) throw new Error(`CDS had ${res.resources.length} clusters`);
          cds.push(performance.now() - started);
        } finally {
          client.close();
        }
      } finally {
        await p.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(
    `Warm start from the store (${SERVICES} services × ${ENDPOINTS} endpoints, mock registry, ${RUNS} runs): ms from spawning portolan serve`,
    [
      { milestone: '/ready 200', ...summarize(ready) },
      { milestone: `wildcard CDS with all ${SERVICES} clusters`, ...summarize(cds) },
    ],
  );
}
