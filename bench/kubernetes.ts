// The kubernetes registry against the stand-in API server (same process, loopback HTTP): how long the
// first list of a cluster takes to become a synced snapshot, what one EndpointSlice event costs to
// publish at that size, and how long an EndpointSlice change takes to reach a proxyless gRPC client.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadClusters } from '../adapters/kubernetes/kubeconfig.js';
import { KubernetesRegistry } from '../adapters/kubernetes/registry.js';
import { silentLogger } from '../log/logger.js';
import { callEcho, startEchoBackend } from '../test/support/echo-backend.js';
import { eventually } from '../test/support/eventually.js';
import { startInProcessPlane } from '../test/support/in-process.js';
import { KubeApiServerStandin } from '../test/support/kube-apiserver-standin.js';
import { xdsEchoClient } from '../test/support/xds-client.js';
import { kubeNode, kubePod, kubeService, kubeSlice } from '../test/unit/kubernetes/kube-fixtures.js';
import { printTable, summarize } from './table.js';

const SERVICES = 2000;
const PODS_PER_SERVICE = 3;
const NODES = 20;
const EVENTS = 50;
const CLIENT_CHANGES = 20;

export async function kubernetesBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-kube-'));
  try {
    await syncAndEvents(dir);
    await clientLatency(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function syncAndEvents(dir: string): Promise<void> {
  const standin = await KubeApiServerStandin.start();
  for (let n = 0; n < NODES; n++) standin.apply('nodes', kubeNode(`node-${n}`, 'r1', `z${n % 3}`));
  for (let i = 0; i < SERVICES; i++) {
    const ns = `ns-${i % 50}`;
    standin.apply('services', kubeService(ns, `svc-${i}`, [{ name: 'grpc', port: 7070 }]));
    const endpoints = [];
    for (let p = 0; p < PODS_PER_SERVICE; p++) {
      standin.apply('pods', kubePod(ns, `svc-${i}-${p}`, `sa-${i}`, { app: `svc-${i}` }));
      endpoints.push({
        address: ip(i * PODS_PER_SERVICE + p),
        nodeName: `node-${(i + p) % NODES}`,
        pod: `svc-${i}-${p}`,
      });
    }
    standin.apply(
      'endpointslices',
      kubeSlice(ns, `svc-${i}-x`, `svc-${i}`, [{ name: 'grpc', port: 8080 }], endpoints),
    );
  }
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const registry = new KubernetesRegistry({
    clusters: loadClusters([{ path: standin.kubeconfig(dir), clusterId: 'bench' }]),
    domain: 'cluster.local',
    logger: silentLogger,
  });
  const started = performance.now();
  await registry.start();
  const syncMs = performance.now() - started;
  global.gc?.();
  const heapMiB = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;

  const samples: number[] = [];
  for (let e = 0; e < EVENTS; e++) {
    const i = (e * 37) % SERVICES;
    const changed = new Promise<void>((resolve) => {
      const off = registry.onChange(() => {
        off();
        resolve();
      });
    });
    const t0 = performance.now();
    standin.apply(
      'endpointslices',
      kubeSlice(
        `ns-${i % 50}`,
        `svc-${i}-x`,
        `svc-${i}`,
        [{ name: 'grpc', port: 8080 }],
        [{ address: ip(900_000 + e) }],
      ),
    );
    await changed;
    samples.push(performance.now() - t0);
  }
  await registry.stop();
  await standin.stop();
  printTable(
    `Kubernetes registry, one cluster (stand-in API server in process, loopback HTTP, list pages of 500): ${SERVICES} Services, ${SERVICES} EndpointSlices, ${SERVICES * PODS_PER_SERVICE} Pods, ${NODES} Nodes.`,
    [
      {
        'first list → synced ms': syncMs.toFixed(0),
        'registry heap MiB': heapMiB.toFixed(1),
        ...prefixed('slice event → change event ms ', summarize(samples)),
      },
    ],
  );
}

async function clientLatency(dir: string): Promise<void> {
  const a = await startEchoBackend('a', '127.0.0.1');
  const b = await startEchoBackend('b', '127.0.0.2', a.port);
  const standin = await KubeApiServerStandin.start();
  const slice = (address: string): void => {
    standin.apply(
      'endpointslices',
      kubeSlice('apps', 'echo-x', 'echo', [{ name: 'grpc', port: a.port }], [{ address }]),
    );
  };
  standin.apply('services', kubeService('apps', 'echo', [{ name: 'grpc', port: 7070 }]));
  slice(a.address);
  const registry = new KubernetesRegistry({
    clusters: loadClusters([{ path: standin.kubeconfig(dir, { context: 'latency' }), clusterId: 'bench' }]),
    domain: 'cluster.local',
    logger: silentLogger,
  });
  const plane = await startInProcessPlane({ extraRegistries: [registry], pushWindowMs: 100 });
  const client = xdsEchoClient('xds:///echo.apps.svc.cluster.local:7070', plane.address, 'bench-kube');
  const samples: number[] = [];
  try {
    await eventually(async () => {
      if ((await callEcho(client)) !== 'a') throw new Error('not yet on a');
    });
    for (let i = 0; i < CLIENT_CHANGES; i++) {
      const next = i % 2 === 0 ? b : a;
      const t0 = performance.now();
      slice(next.address);
      await eventually(
        async () => {
          if ((await callEcho(client)) !== next.name) throw new Error('old endpoint');
        },
        { timeoutMs: 10_000, intervalMs: 2 },
      );
      samples.push(performance.now() - t0);
    }
  } finally {
    client.close();
    await plane.stop();
    await standin.stop();
    await a.stop();
    await b.stop();
  }
  printTable(
    `EndpointSlice change → gRPC client on the new endpoint (ms). Setup: stand-in API server → kubernetes registry → ADS in process, push window 100 ms, one grpc-js-xds client polling every 2 ms, ${CLIENT_CHANGES} changes.`,
    [summarize(samples)],
  );
}

/** 10.x.y.z for the nth endpoint. */
function ip(n: number): string {
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

function prefixed(prefix: string, row: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(row)
      .filter(([k]) => k !== 'n')
      .map(([k, v]) => [prefix + k, v]),
  );
}
