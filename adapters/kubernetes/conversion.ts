// One cluster's Service and its EndpointSlices → a Portolan Service and its Endpoints, as Istio's
// Kubernetes controller converts them. The rules, with the reasons where Portolan differs, are in
// docs/registry-kubernetes.md; this file is their only implementation.
import type { Endpoint, Health, Locality } from '../../model/endpoint.js';
import type { Service, ServicePort } from '../../model/service.js';
import type { KubeEndpointSlice, KubeNode, KubePod, KubeService, KubeSliceEndpoint } from './api.js';
import { portProtocol } from './protocol.js';

/** Istio's endpoint label naming the cluster an endpoint came from. */
export const CLUSTER_LABEL = 'topology.istio.io/cluster';

/** What conversion looks up in the rest of the cluster. */
export interface ClusterLookup {
  readonly clusterId: string;
  readonly domain: string;
  slicesOf(namespace: string, serviceName: string): readonly KubeEndpointSlice[];
  node(name: string): KubeNode | undefined;
  pod(namespace: string, name: string): KubePod | undefined;
}

export interface ConvertedService {
  readonly service: Service;
  readonly endpoints: readonly Endpoint[];
  /** Nodes and pods (`ns/name`) the endpoints were built from, so their changes can be traced here. */
  readonly nodes: ReadonlySet<string>;
  readonly pods: ReadonlySet<string>;
}

export function serviceHostname(namespace: string, name: string, domain: string): string {
  return `${name}.${namespace}.svc.${domain}`;
}

/** The Portolan name of a Service port: its Kubernetes name, or `port-N` for the unnamed single port. */
export function portName(port: { name: string; port: number }): string {
  return port.name || `port-${port.port}`;
}

export function convertService(svc: KubeService, lookup: ClusterLookup, registry: string): ConvertedService {
  const external = svc.type === 'ExternalName';
  const ports: ServicePort[] = svc.ports.map((p) => ({
    name: portName(p),
    number: p.port,
    protocol: portProtocol(p),
  }));
  const service: Service = {
    hostname: serviceHostname(svc.namespace, svc.name, lookup.domain),
    namespace: svc.namespace,
    ports,
    addresses: external ? [] : svc.clusterIPs,
    // Headless Services are STATIC without a VIP (Istio: Passthrough); see the docs for why.
    resolution: external ? 'DNS' : 'STATIC',
    labels: svc.labels,
    registry,
    location: external ? 'MESH_EXTERNAL' : 'MESH_INTERNAL',
  };
  if (external) {
    return {
      service,
      endpoints: externalNameEndpoints(svc, lookup.clusterId),
      nodes: new Set(),
      pods: new Set(),
    };
  }
  return { service, ...sliceEndpoints(svc, lookup) };
}

/** An ExternalName Service has no EndpointSlices: its one endpoint is the external name, on each port. */
function externalNameEndpoints(svc: KubeService, clusterId: string): Endpoint[] {
  if (!svc.externalName || svc.ports.length === 0) return [];
  const ports: Record<string, number> = {};
  for (const p of svc.ports) ports[portName(p)] = p.port;
  return [
    {
      address: svc.externalName,
      ports,
      labels: { [CLUSTER_LABEL]: clusterId },
      locality: { region: '', zone: '', subzone: '' },
      weight: 1,
      health: 'HEALTHY',
      serviceAccount: '',
      network: '',
    },
  ];
}

function sliceEndpoints(
  svc: KubeService,
  lookup: ClusterLookup,
): { endpoints: Endpoint[]; nodes: Set<string>; pods: Set<string> } {
  const nodes = new Set<string>();
  const pods = new Set<string>();
  // An address in two slices (while the controller moves it) is one endpoint: the slice first by name
  // decides its conditions, and the ports of both are served.
  const byAddress = new Map<string, Endpoint>();
  const slices = [...lookup.slicesOf(svc.namespace, svc.name)].sort((a, b) => compare(a.name, b.name));
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') continue;
    const targets = targetPorts(svc, slice);
    if (Object.keys(targets).length === 0) continue;
    for (const e of slice.endpoints) {
      const node = e.nodeName === undefined ? undefined : lookup.node(e.nodeName);
      if (e.nodeName !== undefined) nodes.add(e.nodeName);
      const pod = e.pod && lookup.pod(e.pod.namespace || svc.namespace, e.pod.name);
      if (e.pod) pods.add(`${e.pod.namespace || svc.namespace}/${e.pod.name}`);
      for (const address of e.addresses) {
        const existing = byAddress.get(address);
        if (existing) {
          byAddress.set(address, { ...existing, ports: { ...targets, ...existing.ports } });
          continue;
        }
        byAddress.set(address, {
          address,
          ports: targets,
          labels: { ...pod?.labels, [CLUSTER_LABEL]: lookup.clusterId },
          locality: locality(e, node),
          weight: 1,
          health: health(e),
          serviceAccount: pod?.serviceAccount ?? '',
          network: '',
        });
      }
    }
  }
  const endpoints = [...byAddress.values()].sort((a, b) => compare(a.address, b.address));
  return { endpoints, nodes, pods };
}

/** Per Service port (by Portolan name): the slice's port of the same Kubernetes name. */
function targetPorts(svc: KubeService, slice: KubeEndpointSlice): Record<string, number> {
  const out: Record<string, number> = {};
  for (const sp of svc.ports) {
    const match = slice.ports.find((p) => p.name === sp.name);
    if (match) out[portName(sp)] = match.port;
  }
  return out;
}

/** ready → HEALTHY; not ready but still serving while terminating → DRAINING; else UNHEALTHY. */
export function health(e: Pick<KubeSliceEndpoint, 'ready' | 'serving' | 'terminating'>): Health {
  if (e.ready) return 'HEALTHY';
  if (e.serving && e.terminating) return 'DRAINING';
  return 'UNHEALTHY';
}

/** Zone from the EndpointSlice (the controller copies it from the node), region and subzone from the node. */
export function locality(e: Pick<KubeSliceEndpoint, 'zone'>, node: KubeNode | undefined): Locality {
  return {
    region: node?.region ?? '',
    zone: e.zone || node?.zone || '',
    subzone: node?.subzone ?? '',
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
