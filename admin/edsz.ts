// GET /debug/edsz?proxyID=ID: the load assignments that proxy was last sent, decoded, as clusters of
// localities of endpoints with health and weight (the bytes on the wire, not the catalog).
import type { StreamView } from '../xds/server/observer.js';
import { decodeAny } from '../xds/proto/protos.js';
import { ENDPOINT } from '../xds/proto/type-urls.js';

export interface EdszEndpoint {
  readonly address: string;
  readonly port: number;
  readonly health: string;
  readonly weight: number;
}

export interface EdszLocality {
  readonly locality: { readonly region: string; readonly zone: string; readonly subZone: string };
  readonly priority: number;
  readonly weight: number | null;
  readonly endpoints: readonly EdszEndpoint[];
}

export interface EdszCluster {
  readonly clusterName: string;
  readonly localities: readonly EdszLocality[];
}

export interface EdszView {
  readonly proxyID: string;
  /** The version (SotW) or nonce (delta) of the last EDS response; null before any. */
  readonly version: string | null;
  readonly clusters: readonly EdszCluster[];
}

// The fields of envoy.config.endpoint.v3.ClusterLoadAssignment read here, as decodeAny gives them
// (proto field names, enums as names, defaults omitted).
interface DecodedAssignment {
  readonly cluster_name?: string;
  readonly endpoints?: readonly {
    readonly locality?: { region?: string; zone?: string; sub_zone?: string };
    readonly priority?: number;
    readonly load_balancing_weight?: number | { value?: number };
    readonly lb_endpoints?: readonly {
      readonly endpoint?: { address?: { socket_address?: { address?: string; port_value?: number } } };
      readonly health_status?: string;
      readonly load_balancing_weight?: number | { value?: number };
    }[];
  }[];
}

export function edsz(stream: StreamView, proxyId: string): EdszView {
  const status = stream.typeStatus().find((t) => t.typeUrl === ENDPOINT);
  const clusters = stream
    .heldResources(ENDPOINT)
    .map((r) => decodeAny(r.typeUrl, r.value) as DecodedAssignment)
    .map(cluster)
    .sort((a, b) => a.clusterName.localeCompare(b.clusterName));
  return { proxyID: proxyId, version: status?.sentVersion || null, clusters };
}

function cluster(a: DecodedAssignment): EdszCluster {
  return {
    clusterName: a.cluster_name ?? '',
    localities: (a.endpoints ?? []).map((l) => ({
      locality: {
        region: l.locality?.region ?? '',
        zone: l.locality?.zone ?? '',
        subZone: l.locality?.sub_zone ?? '',
      },
      priority: l.priority ?? 0,
      weight: weightOf(l.load_balancing_weight) ?? null,
      endpoints: (l.lb_endpoints ?? []).map((e) => ({
        address: e.endpoint?.address?.socket_address?.address ?? '',
        port: e.endpoint?.address?.socket_address?.port_value ?? 0,
        // Envoy's default for an endpoint without a status is UNKNOWN, which it treats as healthy.
        health: e.health_status ?? 'UNKNOWN',
        weight: weightOf(e.load_balancing_weight) ?? 1,
      })),
    })),
  };
}

// google.protobuf.UInt32Value decodes as { value } (or as the number, if a wrapper was flattened).
function weightOf(w: number | { value?: number } | undefined): number | undefined {
  if (w === undefined) return undefined;
  return typeof w === 'number' ? w : w.value;
}
