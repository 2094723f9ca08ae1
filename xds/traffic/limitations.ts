// What the clients cannot be given of the mesh config, as one list for /debug/configz: routes
// (VirtualService), clusters (DestinationRule, Sidecar), TLS — each mirroring its renderer — then
// what some client versions are given differently (client-limitations.ts).
import type { MeshConfig } from '../../mesh/mesh-config.js';
import { clientLimitations } from './client-limitations.js';
import { clusterLimitations, type TrafficLimitation } from './cluster-limitations.js';
import { routeLimitations } from './route-limitations.js';
import { tlsLimitations } from './tls-limitations.js';

export type { ClientKind, TrafficLimitation } from './cluster-limitations.js';

export function trafficLimitations(config: MeshConfig): TrafficLimitation[] {
  return [
    ...routeLimitations(config),
    ...clusterLimitations(config),
    ...tlsLimitations(config),
    ...clientLimitations(config),
  ];
}
