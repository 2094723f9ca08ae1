// What the clients cannot be given of the mesh config, as one list for /debug/configz: routes
// (VirtualService), clusters (DestinationRule, Sidecar), what merging the DestinationRules of one
// host leaves out, locality load balancing, TLS — each mirroring its renderer — then authorization
// (authz-limitations.ts) and what some client versions are given differently
// (client-limitations.ts).
import type { MeshConfig } from '../../mesh/mesh-config.js';
import { authzLimitations } from './authz-limitations.js';
import { clientLimitations } from './client-limitations.js';
import { clusterLimitations, type TrafficLimitation } from './cluster-limitations.js';
import { localityLimitations } from './locality-limitations.js';
import { mergeLimitations } from './merge-limitations.js';
import { routeLimitations } from './route-limitations.js';
import { tlsLimitations } from './tls-limitations.js';

export type { ClientKind, TrafficLimitation } from './cluster-limitations.js';

export function trafficLimitations(config: MeshConfig): TrafficLimitation[] {
  return [
    ...routeLimitations(config),
    ...clusterLimitations(config),
    ...mergeLimitations(config),
    ...localityLimitations(config),
    ...tlsLimitations(config),
    ...authzLimitations(config),
    ...clientLimitations(config),
  ];
}
