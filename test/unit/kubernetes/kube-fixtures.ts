// Kubernetes objects for the kubernetes registry's tests, in the API server's JSON form.
import type { KubeObject } from '../../support/kube-apiserver-standin.js';

export interface PortSpec {
  name?: string;
  port: number;
  protocol?: string;
  appProtocol?: string;
  targetPort?: number;
}

export function kubeService(
  namespace: string,
  name: string,
  ports: PortSpec[],
  spec: Record<string, unknown> = {},
  labels: Record<string, string> = {},
): KubeObject {
  return {
    metadata: { namespace, name, labels },
    spec: {
      type: 'ClusterIP',
      clusterIP: '10.96.0.10',
      ports: ports.map((p) => ({ protocol: 'TCP', ...p })),
      ...spec,
    },
  };
}

export interface SliceEndpointSpec {
  address: string | string[];
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  nodeName?: string;
  zone?: string;
  pod?: string;
}

export function kubeSlice(
  namespace: string,
  name: string,
  service: string,
  ports: { name?: string; port: number }[],
  endpoints: SliceEndpointSpec[],
  addressType = 'IPv4',
): KubeObject {
  return {
    metadata: { namespace, name, labels: { 'kubernetes.io/service-name': service } },
    addressType,
    ports: ports.map((p) => ({ name: p.name ?? '', port: p.port, protocol: 'TCP' })),
    endpoints: endpoints.map((e) => ({
      addresses: Array.isArray(e.address) ? e.address : [e.address],
      conditions: {
        ...(e.ready !== undefined && { ready: e.ready }),
        ...(e.serving !== undefined && { serving: e.serving }),
        ...(e.terminating !== undefined && { terminating: e.terminating }),
      },
      ...(e.nodeName !== undefined && { nodeName: e.nodeName }),
      ...(e.zone !== undefined && { zone: e.zone }),
      ...(e.pod !== undefined && { targetRef: { kind: 'Pod', namespace, name: e.pod } }),
    })),
  };
}

export function kubeNode(name: string, region: string, zone: string, subzone?: string): KubeObject {
  return {
    metadata: {
      name,
      labels: {
        'topology.kubernetes.io/region': region,
        'topology.kubernetes.io/zone': zone,
        ...(subzone !== undefined && { 'topology.istio.io/subzone': subzone }),
      },
    },
    spec: {},
  };
}

export function kubePod(
  namespace: string,
  name: string,
  serviceAccount: string,
  labels: Record<string, string> = {},
): KubeObject {
  return {
    metadata: { namespace, name, labels },
    spec: { serviceAccountName: serviceAccount, containers: [{ name: 'app', image: 'example' }] },
  };
}
