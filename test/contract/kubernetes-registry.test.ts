// The registry contract against the kubernetes registry, reading Services and EndpointSlices from
// the stand-in API server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadClusters } from '../../adapters/kubernetes/kubeconfig.js';
import { DEFAULT_TIMING } from '../../adapters/kubernetes/list-watcher.js';
import { KubernetesRegistry } from '../../adapters/kubernetes/registry.js';
import { silentLogger } from '../../log/logger.js';
import { eventually } from '../support/eventually.js';
import {
  KubeApiServerStandin,
  type KubeObject,
  type RecordedRequest,
} from '../support/kube-apiserver-standin.js';
import { registryContract, type ContractService } from '../support/registry-contract.js';

const NAMESPACE = 'contract';

registryContract({
  name: 'kubernetes',
  capabilities: {
    sourceFails: true,
    failureAtStartHoldsSync: true,
    restore: 'until-live-sync',
    emptySourceAfterRestore: 'replaces',
  },
  quietMs: 1000,
  async create(seed) {
    const standin = await KubeApiServerStandin.start();
    const dir = mkdtempSync(join(tmpdir(), 'portolan-contract-kube-'));
    const apply = (before: ContractService | undefined, after: ContractService): void => {
      if (before?.protocol !== after.protocol) standin.apply('services', kubeService(after));
      if (before?.addresses.join() !== after.addresses.join())
        standin.apply('endpointslices', kubeSlice(after));
    };
    for (const service of seed) apply(undefined, service);
    let down = false;
    const registry = new KubernetesRegistry({
      clusters: loadClusters([{ path: standin.kubeconfig(dir), clusterId: 'contract' }]),
      domain: 'cluster.local',
      logger: silentLogger,
      timing: {
        ...DEFAULT_TIMING,
        requestTimeoutMs: 1000,
        backoff: { initialMs: 20, maxMs: 100, jitter: 0 },
      },
    });
    const isWatch = (r: RecordedRequest): boolean => r.query.watch === 'true' || r.query.watch === '1';
    return {
      registry,
      hostname: (name) => `${name}.${NAMESPACE}.svc.cluster.local`,
      async write({ before, after }) {
        if (after) return apply(before, after);
        if (!before) return;
        standin.remove('endpointslices', NAMESPACE, `${before.name}-1`);
        standin.remove('services', NAMESPACE, before.name);
      },
      breakSource: async () => {
        down = true;
        await standin.down();
      },
      repairSource: async () => {
        await standin.up();
        down = false;
      },
      sourceActivity: () => standin.requests.length,
      async settled() {
        if (down) {
          // Refused connections reach no stand-in: the proof is each watcher recording a failure
          // after the call (it retries after backoff), and the registry publishing it.
          const since = new Date().toISOString();
          await eventually(
            () =>
              registry
                .debug()
                .clusters.flatMap((c) => Object.values(c.watches))
                .every((w) => w.unavailable !== undefined || (w.lastErrorAt ?? '') > since) &&
              (registry.status().lastErrorAt ?? '') > since,
            { what: 'every watcher to fail again' },
          );
          return;
        }
        // A BOOKMARK at the current version, then the end of every watch (as a watch timeout ends
        // it): a watcher re-watches from the version it has applied, so one asking from the bookmark's
        // has applied every event before it. (One not watching yet, just listed, watches from the
        // list's version, the current one too.)
        const rv = standin.resourceVersion();
        const mark = standin.requests.length;
        // Every path the registry lists or watches (a watcher lists first, then watches).
        const paths = new Set(
          standin.requests.filter((r) => isWatch(r) || r.query.limit !== undefined).map((r) => r.path),
        );
        standin.bookmark();
        standin.endWatches();
        await eventually(
          () => {
            const asked = standin.requests
              .slice(mark)
              .filter((r) => isWatch(r) && r.query.resourceVersion === rv);
            return [...paths].every((path) => asked.some((r) => r.path === path));
          },
          { what: `a watch from ${rv} on each of ${[...paths].join(', ')}` },
        );
      },
      async close() {
        await standin.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});

function kubeService(service: ContractService): KubeObject {
  return {
    metadata: { namespace: NAMESPACE, name: service.name },
    spec: {
      type: 'ClusterIP',
      clusterIP: '10.96.0.10',
      ports: [{ name: 'web', port: 8080, protocol: 'TCP', appProtocol: service.protocol.toLowerCase() }],
    },
  };
}

function kubeSlice(service: ContractService): KubeObject {
  return {
    metadata: {
      namespace: NAMESPACE,
      name: `${service.name}-1`,
      labels: { 'kubernetes.io/service-name': service.name },
    },
    addressType: 'IPv4',
    ports: [{ name: 'web', port: 8080, protocol: 'TCP' }],
    endpoints: service.addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
  };
}
