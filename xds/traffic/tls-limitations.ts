// What of the mTLS config a kind of client is not given, for /debug/configz beside the traffic
// limitations (cluster-limitations.ts): DestinationRule `tls` that gRPC cannot express, secrets by
// name, and PERMISSIVE on proxyless gRPC servers. Mirrors xds/generators/grpc/cluster-security.ts and
// server-listener.ts.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import { resourceKey, type ClientTLSSettings, type TrafficPolicy } from '../../mesh/types.js';
import type { ClientKind, TrafficLimitation } from './cluster-limitations.js';

export function tlsLimitations(config: MeshConfig): TrafficLimitation[] {
  const out: TrafficLimitation[] = [];
  for (const rule of config.destinationRules) {
    const add = (field: string, clients: ClientKind[], reason: string): void => {
      out.push({ resource: resourceKey(rule), field, clients, reason });
    };
    const policies: [string, TrafficPolicy | undefined][] = [
      ['spec.trafficPolicy', rule.spec.trafficPolicy],
      ...(rule.spec.subsets ?? []).map((s, i): [string, TrafficPolicy | undefined] => [
        `spec.subsets[${i}].trafficPolicy`,
        s.trafficPolicy,
      ]),
    ];
    for (const [path, policy] of policies) {
      check(`${path}.tls`, policy?.tls, add);
      policy?.portLevelSettings?.forEach((p, i) => check(`${path}.portLevelSettings[${i}].tls`, p.tls, add));
    }
  }
  for (const pa of config.peerAuthentications) {
    const modes = [
      ['spec.mtls.mode', pa.spec.mtls?.mode],
      ...Object.entries(pa.spec.portLevelMtls ?? {}).map(([port, m]) => [
        `spec.portLevelMtls.${port}.mode`,
        m.mode,
      ]),
    ];
    for (const [field, mode] of modes)
      if (mode === 'PERMISSIVE')
        out.push({
          resource: resourceKey(pa),
          field: field ?? '',
          clients: ['grpc'],
          reason: 'a gRPC server cannot tell TLS from plaintext on one port: served as plaintext',
        });
  }
  return out;
}

type Add = (field: string, clients: ClientKind[], reason: string) => void;

function check(field: string, tls: ClientTLSSettings | undefined, add: Add): void {
  if (!tls) return;
  if (tls.mode === 'SIMPLE' || tls.mode === 'MUTUAL')
    add(
      `${field}.mode`,
      ['grpc'],
      'gRFC A29 names certificate providers, not files: the cluster is not served to gRPC clients',
    );
  if (tls.credentialName !== undefined)
    add(`${field}.credentialName`, ['envoy', 'grpc'], 'no secret store: give the certificate files');
}
