// Typed views of decoded xDS resources (decodeAny output: snake_case, nested Anys expanded to
// objects with '@type'), covering only the fields tests read.
import { decodeAny } from '../../xds/proto/protos.js';

export interface DecodedSocketAddress {
  address?: string;
  port_value?: number;
}

export interface DecodedLbEndpoint {
  endpoint?: { address?: { socket_address?: DecodedSocketAddress } };
  health_status?: string;
  load_balancing_weight?: { value?: number };
}

export interface DecodedLocalityGroup {
  locality?: { region?: string; zone?: string; sub_zone?: string };
  load_balancing_weight?: { value?: number };
  priority?: number;
  lb_endpoints?: DecodedLbEndpoint[];
}

export interface DecodedLoadAssignment {
  cluster_name?: string;
  endpoints?: DecodedLocalityGroup[];
}

export interface DecodedCluster {
  name?: string;
  type?: string;
  eds_cluster_config?: { service_name?: string; eds_config?: { ads?: object } };
  load_assignment?: DecodedLoadAssignment;
}

export interface DecodedHttpConnectionManager {
  '@type'?: string;
  rds?: { route_config_name?: string; config_source?: { ads?: object } };
  http_filters?: { name?: string; typed_config?: { '@type'?: string } }[];
}

export interface DecodedListener {
  name?: string;
  api_listener?: { api_listener?: DecodedHttpConnectionManager };
}

export interface DecodedRouteConfiguration {
  name?: string;
  virtual_hosts?: {
    name?: string;
    domains?: string[];
    routes?: { match?: { prefix?: string }; route?: { cluster?: string } }[];
  }[];
}

/** Decodes one resource's Any payload as `T` (the caller names the type it asked for). */
export function decodeAs<T>(typeUrl: string, value: Uint8Array): T {
  return decodeAny(typeUrl, value) as T;
}

/** `address` of every endpoint in a load assignment, in order. */
export function lbAddresses(cla: DecodedLoadAssignment | undefined): string[] {
  return (cla?.endpoints ?? []).flatMap((g) =>
    (g.lb_endpoints ?? []).map((e) => e.endpoint?.address?.socket_address?.address ?? ''),
  );
}
