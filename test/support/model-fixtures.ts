// Builders for model objects in tests: a valid Service or Endpoint with overridable fields.
import type { Endpoint } from '../../model/endpoint.js';
import type { Service, ServicePort } from '../../model/service.js';

export function servicePort(
  name: string,
  number: number,
  protocol: ServicePort['protocol'] = 'GRPC',
): ServicePort {
  return { name, number, protocol };
}

/** A STATIC, mesh-internal service with the given ports, as the mock registry would store it. */
export function service(
  hostname: string,
  ports: readonly ServicePort[],
  overrides: Partial<Service> = {},
): Service {
  return {
    hostname,
    namespace: 'default',
    ports,
    addresses: [],
    resolution: 'STATIC',
    labels: {},
    registry: 'mock',
    location: 'MESH_INTERNAL',
    ...overrides,
  };
}

/** The input form MockRegistry.putService takes (no `registry`). */
export function mockService(
  hostname: string,
  ports: readonly ServicePort[],
  overrides: Partial<Omit<Service, 'registry'>> = {},
): Omit<Service, 'registry'> {
  return {
    hostname,
    namespace: 'default',
    ports,
    addresses: [],
    resolution: 'STATIC',
    labels: {},
    location: 'MESH_INTERNAL',
    ...overrides,
  };
}

export function endpoint(
  address: string,
  ports: Record<string, number>,
  overrides: Partial<Endpoint> = {},
): Endpoint {
  return {
    address,
    ports,
    labels: {},
    locality: { region: 'r1', zone: 'z1', subzone: '' },
    weight: 1,
    health: 'HEALTHY',
    serviceAccount: '',
    network: '',
    ...overrides,
  };
}
