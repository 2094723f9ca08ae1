// The world the cache differential test (cache-differential.test.ts) changes at random: services and
// endpoints as a registry holds them, and the mesh config's resources, each of which can be switched
// off and on, and each VirtualService and DestinationRule also switched to an edited version of
// itself (same name, other content). Each change comes with its event, keyed as its producer keys it.
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import { resolveHost } from '../../../mesh/hosts.js';
import { resolvedHosts } from '../../../mesh/virtual-service-index.js';
import type { Catalog } from '../../../model/catalog.js';
import { changeOf, everythingChanged, type ChangeEvent } from '../../../model/change.js';
import type { Endpoint } from '../../../model/endpoint.js';
import type { Service } from '../../../model/service.js';
import { configHasFaults } from '../../../xds/traffic/route-context.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { configResource } from '../../support/mesh-fixtures.js';
import { ECHO, fixtureCatalog, fixtureMeshConfig, VM_IP } from '../envoy/fixture-mesh.js';

/** mulberry32: a small seeded PRNG, so a failing sequence can be replayed from its seed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface World {
  services: Map<string, Service>;
  endpoints: Map<string, Endpoint[]>;
  readonly removed: Map<string, { service: Service; endpoints: Endpoint[] }>;
  /** Per entry of configPool: 0 off, 1 as written, 2 its edited version (VirtualServices and DestinationRules). */
  state: number[];
  generation: number;
  catalog: Catalog;
  config: MeshConfig;
}

type PoolEntry =
  | { readonly kind: 'vs'; readonly value: MeshConfig['virtualServices'][number] }
  | { readonly kind: 'dr'; readonly value: MeshConfig['destinationRules'][number] }
  | { readonly kind: 'gw'; readonly value: MeshConfig['gateways'][number] }
  | { readonly kind: 'sidecar'; readonly value: MeshConfig['sidecars'][number] }
  | { readonly kind: 'pa'; readonly value: MeshConfig['peerAuthentications'][number] }
  | { readonly kind: 'ap'; readonly value: MeshConfig['authorizationPolicies'][number] }
  | { readonly kind: 'ra'; readonly value: MeshConfig['requestAuthentications'][number] };

const LEDGER_SELECTOR = { matchLabels: { app: 'ledger' } };

/** Security policies for the proxyless servers (none in the Envoy fixture mesh), off at the start. */
const securityPool: readonly PoolEntry[] = [
  { kind: 'pa', value: configResource('PeerAuthentication', 'default', { mtls: { mode: 'STRICT' } }) },
  {
    kind: 'pa',
    value: configResource(
      'PeerAuthentication',
      'ledger',
      { selector: LEDGER_SELECTOR, portLevelMtls: { '7070': { mode: 'STRICT' } } },
      'scoped',
    ),
  },
  {
    kind: 'ap',
    value: configResource(
      'AuthorizationPolicy',
      'ledger-callers',
      {
        selector: LEDGER_SELECTOR,
        action: 'ALLOW',
        rules: [{ from: [{ source: { principals: ['cluster.local/ns/default/sa/web'] } }] }],
      },
      'scoped',
    ),
  },
  { kind: 'ap', value: configResource('AuthorizationPolicy', 'deny-none', { action: 'DENY', rules: [] }) },
  {
    kind: 'ra',
    value: configResource('RequestAuthentication', 'jwt', {
      jwtRules: [{ issuer: 'https://issuer.example', jwksUri: 'https://keys.example:8443/jwks' }],
    }),
  },
  {
    kind: 'ra',
    value: configResource(
      'RequestAuthentication',
      'ledger-jwt',
      { selector: LEDGER_SELECTOR, jwtRules: [{ issuer: 'https://issuer.example', jwks: '{"keys":[]}' }] },
      'scoped',
    ),
  },
];

/** Fault injection (the proxyless listeners' fault filter follows whether any route has it), off at the start. */
const faultPool: readonly PoolEntry[] = [
  {
    kind: 'vs',
    value: configResource('VirtualService', 'echo-faults', {
      hosts: [ECHO],
      http: [
        {
          fault: { abort: { httpStatus: 503, percentage: { value: 10 } } },
          route: [{ destination: { host: ECHO } }],
        },
      ],
    }),
  },
];
const offAtStart = [...securityPool, ...faultPool];

const fixtureConfig = fixtureMeshConfig();
const configPool: readonly PoolEntry[] = [
  ...fixtureConfig.virtualServices.map((value) => ({ kind: 'vs' as const, value })),
  ...fixtureConfig.destinationRules.map((value) => ({ kind: 'dr' as const, value })),
  ...fixtureConfig.gateways.map((value) => ({ kind: 'gw' as const, value })),
  ...fixtureConfig.sidecars.map((value) => ({ kind: 'sidecar' as const, value })),
  ...offAtStart,
];

/** An edit of a pool entry that keeps its name: other routes or another policy and one more subset. */
function edited(entry: PoolEntry): PoolEntry {
  switch (entry.kind) {
    case 'vs': {
      const http = (entry.value.spec.http ?? []).map((r) => ({ ...r, timeout: '3s' }));
      return { kind: 'vs', value: { ...entry.value, spec: { ...entry.value.spec, http: http.reverse() } } };
    }
    case 'dr': {
      const spec = entry.value.spec;
      return {
        kind: 'dr',
        value: {
          ...entry.value,
          spec: {
            ...spec,
            trafficPolicy: {
              loadBalancer: { simple: 'LEAST_REQUEST' },
              connectionPool: { http: { http2MaxRequests: 7 } },
            },
            subsets: [...(spec.subsets ?? []), { name: 'rack-a', labels: { rack: 'a' } }],
          },
        },
      };
    }
    default:
      return entry;
  }
}
const editedPool = configPool.map(edited);
const states = (e: PoolEntry): number => (e.kind === 'vs' || e.kind === 'dr' ? 3 : 2);

function meshConfig(state: readonly number[], generation: number): MeshConfig {
  const on = configPool.flatMap((e, i) => {
    const at = state[i] ?? 0;
    return at === 0 ? [] : [at === 2 ? (editedPool[i] ?? e) : e];
  });
  return Object.freeze({
    generation,
    virtualServices: on.flatMap((e) => (e.kind === 'vs' ? [e.value] : [])),
    destinationRules: on.flatMap((e) => (e.kind === 'dr' ? [e.value] : [])),
    gateways: on.flatMap((e) => (e.kind === 'gw' ? [e.value] : [])),
    sidecars: on.flatMap((e) => (e.kind === 'sidecar' ? [e.value] : [])),
    peerAuthentications: on.flatMap((e) => (e.kind === 'pa' ? [e.value] : [])),
    authorizationPolicies: on.flatMap((e) => (e.kind === 'ap' ? [e.value] : [])),
    requestAuthentications: on.flatMap((e) => (e.kind === 'ra' ? [e.value] : [])),
  });
}

export function initialWorld(): World {
  const catalog = fixtureCatalog();
  const services = new Map(catalog.services().map((s) => [s.hostname, s]));
  const endpoints = new Map<string, Endpoint[]>();
  for (const s of catalog.services()) {
    const seen = new Set<Endpoint>();
    for (const p of s.ports) for (const pe of catalog.endpoints(s.hostname, p.number)) seen.add(pe.endpoint);
    endpoints.set(s.hostname, [...seen]);
  }
  const state = configPool.map((e) => (offAtStart.includes(e) ? 0 : 1));
  return {
    services,
    endpoints,
    removed: new Map(),
    state,
    generation: 1,
    catalog,
    config: meshConfig(state, 1),
  };
}

/**
 * One random change to the world, as an event; `log` gets a line saying what it was. `configOnly`:
 * a change of the mesh config (a sequence ends with some, which no later service change can hide).
 */
export function change(world: World, rnd: () => number, log: string[], configOnly = false): ChangeEvent {
  const pick = <T>(list: readonly T[]): T => {
    const item = list[Math.floor(rnd() * list.length)];
    if (item === undefined) throw new Error('empty list');
    return item;
  };
  const roll = configOnly ? 1 : rnd();
  const hosts = [...world.services.keys()].sort();
  if (roll < 0.45) {
    // Endpoints of one service: some kept, some re-weighted or relabelled, one maybe added.
    const host = pick(hosts);
    const svc = world.services.get(host);
    const ports = Object.fromEntries((svc?.ports ?? []).map((p) => [p.name, 1000 + p.number]));
    const before = world.endpoints.get(host) ?? [];
    const after = before
      .filter(() => rnd() < 0.8)
      .map((e) =>
        rnd() < 0.3
          ? { ...e, weight: 1 + Math.floor(rnd() * 4), labels: { version: pick(['v1', 'v2']) } }
          : e,
      );
    if (rnd() < 0.5)
      after.push(
        endpoint(
          pick([VM_IP, '10.0.0.2', `10.1.${Math.floor(rnd() * 4)}.${1 + Math.floor(rnd() * 200)}`]),
          ports,
          {
            labels: { version: pick(['v1', 'v2']), rack: pick(['a', 'b']) },
            health: pick(['HEALTHY', 'HEALTHY', 'DRAINING'] as const),
          },
        ),
      );
    world.endpoints.set(host, after);
    log.push(`endpoints ${host}: ${before.length} → ${after.length}`);
    return changeOf({ endpoints: [host] });
  }
  if (roll < 0.75) {
    const sub = rnd();
    if (sub < 0.3 && hosts.length > 4) {
      const host = pick(hosts);
      const svc = world.services.get(host);
      if (svc) world.removed.set(host, { service: svc, endpoints: world.endpoints.get(host) ?? [] });
      world.services.delete(host);
      world.endpoints.delete(host);
      log.push(`service removed ${host}`);
      return changeOf({ services: [host], endpoints: [host] });
    }
    if (sub < 0.5 && world.removed.size > 0) {
      const host = pick([...world.removed.keys()].sort());
      const back = world.removed.get(host);
      world.removed.delete(host);
      if (back) {
        world.services.set(host, back.service);
        world.endpoints.set(host, back.endpoints);
      }
      log.push(`service restored ${host}`);
      return changeOf({ services: [host], endpoints: [host] });
    }
    if (sub < 0.75) {
      // A port added to or removed from a service (the fixture's port stays).
      const host = pick(hosts);
      const svc = world.services.get(host);
      if (svc) {
        const has = svc.ports.some((p) => p.name === 'extra');
        const ports = has
          ? svc.ports.filter((p) => p.name !== 'extra')
          : [...svc.ports, servicePort('extra', 9999, pick(['HTTP', 'GRPC', 'TCP'] as const))];
        world.services.set(host, { ...svc, ports });
      }
      log.push(`port toggled on ${host}`);
      return changeOf({ services: [host], endpoints: [host] });
    }
    const host = `svc-${Math.floor(rnd() * 6)}.mesh.internal`;
    const protocol = pick(['HTTP', 'GRPC', 'TCP'] as const);
    world.services.set(host, service(host, [servicePort('main', 8080, protocol)]));
    world.endpoints.set(host, [
      endpoint(pick([VM_IP, `10.2.0.${1 + Math.floor(rnd() * 50)}`]), { main: 8080 }),
    ]);
    log.push(`service put ${host} ${protocol}`);
    return changeOf({ services: [host], endpoints: [host] });
  }
  // Mesh config: one VirtualService, DestinationRule, Gateway, Sidecar or security policy switched
  // off or on, or to or from its edited version; the event as the config directory makes it.
  const i = Math.floor(rnd() * configPool.length);
  const entry = configPool[i];
  if (!entry) throw new Error('empty pool');
  const from = world.state[i] ?? 0;
  const to = (from + 1 + Math.floor(rnd() * (states(entry) - 1))) % states(entry);
  world.state[i] = to;
  world.generation += 1;
  const before = world.config;
  world.config = meshConfig(world.state, world.generation);
  log.push(`config ${entry.kind} ${entry.value.name} ${['off', 'on', 'edited'][to]}`);
  const versions = [from, to].flatMap((at) =>
    at === 0 ? [] : [at === 2 ? (editedPool[i] ?? entry) : entry],
  );
  return configChange(entry, versions, configHasFaults(before) !== configHasFaults(world.config));
}

/** The keys of a change of one pool entry from one of `versions` to the other, as a producer names them. */
function configChange(entry: PoolEntry, versions: readonly PoolEntry[], faultsFlipped: boolean): ChangeEvent {
  if (faultsFlipped) return everythingChanged();
  if (entry.kind !== 'vs' && entry.kind !== 'dr') return changeOf({ kinds: [KIND_OF[entry.kind]] });
  const hosts = versions.flatMap((v) =>
    v.kind === 'vs'
      ? resolvedHosts(v.value)
      : v.kind === 'dr'
        ? [resolveHost(v.value.spec.host, v.value.namespace)]
        : [],
  );
  if (hosts.some((h) => h.startsWith('*'))) return everythingChanged();
  return changeOf({ rules: hosts, kinds: [KIND_OF[entry.kind]] });
}

const KIND_OF: Readonly<Record<PoolEntry['kind'], string>> = {
  vs: 'virtualServices',
  dr: 'destinationRules',
  gw: 'gateways',
  sidecar: 'sidecars',
  pa: 'peerAuthentications',
  ap: 'authorizationPolicies',
  ra: 'requestAuthentications',
};
