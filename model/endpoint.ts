// One instance of a service: where traffic for each service port goes, and how to weigh it.

export type Health = 'HEALTHY' | 'UNHEALTHY' | 'DRAINING';

export interface Locality {
  readonly region: string;
  readonly zone: string;
  readonly subzone: string;
}

export const NO_LOCALITY: Locality = Object.freeze({ region: '', zone: '', subzone: '' });

export interface Endpoint {
  /** IP address (or a DNS name for DNS-resolved services). */
  readonly address: string;
  /** Target port per service port name. A service port missing here is not served by this endpoint. */
  readonly ports: Readonly<Record<string, number>>;
  readonly labels: Readonly<Record<string, string>>;
  readonly locality: Locality;
  /** Load-balancing weight, >= 1. */
  readonly weight: number;
  readonly health: Health;
  readonly serviceAccount: string;
  /** Network the address is reachable on; empty means the default network. */
  readonly network: string;
}

/** An endpoint resolved against one service port: the address and port a client dials. */
export interface PortEndpoint {
  readonly endpoint: Endpoint;
  readonly port: number;
}

/** Parses `region/zone/subzone` (Istio's locality string); missing parts are empty. */
export function parseLocality(text: string | undefined): Locality {
  if (!text) return NO_LOCALITY;
  const [region = '', zone = '', subzone = ''] = text.split('/');
  return { region, zone, subzone };
}

export function localityKey(l: Locality): string {
  return `${l.region}/${l.zone}/${l.subzone}`;
}
