// The registry contract against the kubernetes registry, reading Services and EndpointSlices from
// the stand-in API server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadClusters } from '../../adapters/kubernetes/kubeconfig.js';
import { DEFAULT_TIMING } from '../../adapters/kubernetes/list-watcher.js';
import { KubernetesRegistry } from '../../adapters/kubernetes/registry.js';
import { silentLogger } from '../../log/logger.js';
import { KubeApiServerStandin, type KubeObject } from '../support/kube-apiserver-standin.js';
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
    return {
      registry: new KubernetesRegistry({
        clusters: loadClusters([{ path: standin.kubeconfig(dir), clusterId: 'contract' }]),
        domain: 'cluster.local',
        logger: silentLogger,
        timing: {
          ...DEFAULT_TIMING,
          requestTimeoutMs: 1000,
          backoff: { initialMs: 20, maxMs: 100, jitter: 0 },
        },
      }),
      hostname: (name) => `${name}.${NAMESPACE}.svc.cluster.local`,
      async write({ before, after }) {
        if (after) return apply(before, after);
        if (!before) return;
        standin.remove('endpointslices', NAMESPACE, `${before.name}-1`);
        standin.remove('services', NAMESPACE, before.name);
      },
      breakSource: () => standin.down(),
      repairSource: () => standin.up(),
      sourceActivity: () => standin.requests.length,
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
