// A differential test of the incremental caches (ResourceCache, ResponseCache): after a random,
// seeded (reproducible) sequence of catalog and mesh-config changes, applied as the ADS server applies
// them (a new catalog and config, then cache.apply of the event narrowed as the push loop narrows
// it: a config change reaches the hosts whose rules changed), with streams reading in between, what the
// caches serve equals what a from-scratch generation for the final state produces, resource by
// resource and response by response, for every proxy of the fixture mesh (each Envoy mode, the
// gateway, the Sidecar-scoped proxy, and proxyless gRPC clients, which also ask for an xDS server
// listener). The config's changes include kinds read wholesale (Gateways, Sidecars,
// PeerAuthentications, AuthorizationPolicies, RequestAuthentications), so a generator that reads one
// it does not declare (ResourceGenerator.wholeKinds) serves a stale resource here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import { buildCatalog, type Catalog } from '../../../model/catalog.js';
import { changeOf, everythingChanged, mergeChanges, type ChangeEvent } from '../../../model/change.js';
import type { Endpoint } from '../../../model/endpoint.js';
import type { Service } from '../../../model/service.js';
import type { GenerateContext, ResourceGenerator, ServingView } from '../../../xds/generators/generator.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../../../xds/generators/index.js';
import { servingView } from '../../../xds/generators/view-memo.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { versionOf, type EncodedResource } from '../../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { encodeResponseBody } from '../../../xds/proto/wire.js';
import { proxyFromNode, type Proxy } from '../../../xds/proxy/proxy.js';
import { narrowChange } from '../../../xds/server/narrow-change.js';
import { ResourceCache, typeKey, type ChangeSet } from '../../../xds/server/resource-cache.js';
import { ResponseCache } from '../../../xds/server/response-cache.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { configResource } from '../../support/mesh-fixtures.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../../../xds/generators/grpc/server-listener.js';
import { fixtureCatalog, fixtureMeshConfig, fixtureProxies, VM_IP } from '../envoy/fixture-mesh.js';

const SEQUENCES = 12;
const STEPS = 25;

/** mulberry32: a small seeded PRNG, so a failing sequence can be replayed from its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function proxies(): Record<string, Proxy> {
  return {
    ...fixtureProxies(),
    grpc: proxyFromNode({ id: 'grpc-1', user_agent_name: 'gRPC Node' }),
    grpcScoped: proxyFromNode({
      id: 'grpc-2',
      user_agent_name: 'grpc-go',
      metadata: { NAMESPACE: 'scoped', LABELS: { app: 'ledger' } },
    }),
  };
}

// The world the changes act on: services and endpoints as a registry holds them, and the mesh
// config's resources, each of which can be switched off and on, and each VirtualService and
// DestinationRule also switched to an edited version of itself (same name, other content).

interface World {
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

/** Where the proxyless clients' xDS servers listen (gRFC A36): the server listener they ask for. */
const GRPC_SERVER_LISTENER = GRPC_SERVER_LISTENER_TEMPLATE.replace('%s', '0.0.0.0:7070');
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

const fixtureConfig = fixtureMeshConfig();
const configPool: readonly PoolEntry[] = [
  ...fixtureConfig.virtualServices.map((value) => ({ kind: 'vs' as const, value })),
  ...fixtureConfig.destinationRules.map((value) => ({ kind: 'dr' as const, value })),
  ...fixtureConfig.gateways.map((value) => ({ kind: 'gw' as const, value })),
  ...fixtureConfig.sidecars.map((value) => ({ kind: 'sidecar' as const, value })),
  ...securityPool,
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

function initialWorld(): World {
  const catalog = fixtureCatalog();
  const services = new Map(catalog.services().map((s) => [s.hostname, s]));
  const endpoints = new Map<string, Endpoint[]>();
  for (const s of catalog.services()) {
    const seen = new Set<Endpoint>();
    for (const p of s.ports) for (const pe of catalog.endpoints(s.hostname, p.number)) seen.add(pe.endpoint);
    endpoints.set(s.hostname, [...seen]);
  }
  const state = configPool.map((e) => (securityPool.includes(e) ? 0 : 1));
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

/** One random change to the world, as an event; `log` gets a line saying what it was. */
function change(world: World, rnd: () => number, log: string[]): ChangeEvent {
  const pick = <T>(list: readonly T[]): T => {
    const item = list[Math.floor(rnd() * list.length)];
    if (item === undefined) throw new Error('empty list');
    return item;
  };
  const roll = rnd();
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
  // off or on, or to or from its edited version; the event as the ADS server queues a config change.
  const i = Math.floor(rnd() * configPool.length);
  const entry = configPool[i];
  if (!entry) throw new Error('empty pool');
  const from = world.state[i] ?? 0;
  const to = (from + 1 + Math.floor(rnd() * (states(entry) - 1))) % states(entry);
  world.state[i] = to;
  world.generation += 1;
  world.config = meshConfig(world.state, world.generation);
  log.push(`config ${entry.kind} ${entry.value.name} ${['off', 'on', 'edited'][to]}`);
  return everythingChanged();
}

// Reading: what a client following references holds (CDS and LDS wildcard, then the EDS and RDS
// names they reference), through a `read` that answers one subscription.

interface Subscription {
  readonly wildcard: boolean;
  readonly names: readonly string[];
}

type Read = (typeUrl: string, sub: Subscription) => readonly EncodedResource[];
type Held = Map<string, readonly EncodedResource[]>;

/** The listener names a proxy asks for beside its wildcard: a proxyless server's own listener. */
const listenerNames = (proxy: Proxy): string[] => (proxy.kind === 'grpc' ? [GRPC_SERVER_LISTENER] : []);

function follow(read: Read, proxy: Proxy): Held {
  const clusters = read(CLUSTER, { wildcard: true, names: [] });
  const listeners = read(LISTENER, { wildcard: true, names: listenerNames(proxy) });
  const edsNames = new Set<string>();
  for (const c of clusters) {
    const decoded = decodeAny(c.typeUrl, c.value) as {
      name?: string;
      type?: string;
      eds_cluster_config?: { service_name?: string };
    };
    if (decoded.type === 'EDS') edsNames.add(decoded.eds_cluster_config?.service_name || c.name);
  }
  const rdsNames = new Set<string>();
  for (const l of listeners) collectStrings(decodeAny(l.typeUrl, l.value), 'route_config_name', rdsNames);
  return new Map([
    [CLUSTER, clusters],
    [ENDPOINT, read(ENDPOINT, { wildcard: false, names: [...edsNames].sort() })],
    [LISTENER, listeners],
    [ROUTE, read(ROUTE, { wildcard: false, names: [...rdsNames].sort() })],
  ]);
}

function collectStrings(value: unknown, key: string, out: Set<string>): void {
  if (Array.isArray(value)) for (const v of value) collectStrings(v, key, out);
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      if (k === key && typeof v === 'string') out.add(v);
      else collectStrings(v, key, out);
    }
}

const present = (list: readonly (EncodedResource | undefined)[]): EncodedResource[] =>
  list.filter((r): r is EncodedResource => r !== undefined);

/** The caches as a SotW stream uses them: one shared response per view and subscription. */
class IncrementalView {
  constructor(
    private readonly generators: GeneratorTable,
    private readonly cache: ResourceCache,
    private readonly responses: ResponseCache,
  ) {}

  generator(proxy: Proxy, typeUrl: string): ResourceGenerator {
    const g = this.generators.find(proxy.kind, typeUrl);
    if (!g) throw new Error(`no generator for ${proxy.kind} ${typeUrl}`);
    return g;
  }

  /** The full response for a subscription: its body and resources. */
  response(proxy: Proxy, typeUrl: string, sub: Subscription) {
    const g = this.generator(proxy, typeUrl);
    const tk = typeKey(proxy.kind, typeUrl);
    const subKey = `${sub.wildcard ? '*' : '-'}\0${[...sub.names].sort().join('\0')}`;
    return this.responses.get(tk, this.cache.epochOf(tk), `${g.viewKey(proxy)}\0${subKey}`, typeUrl, () => {
      const names = new Set(sub.names);
      if (sub.wildcard) for (const n of this.cache.wildcardNames(g, proxy).names) names.add(n);
      return present([...names].map((n) => this.cache.get(g, proxy, n)));
    });
  }

  /** A partial response (EDS, RDS): only `names`, as a push of changed resources sends them. */
  partial(proxy: Proxy, typeUrl: string, names: readonly string[]) {
    const g = this.generator(proxy, typeUrl);
    const tk = typeKey(proxy.kind, typeUrl);
    const sorted = [...names].sort();
    return this.responses.get(
      tk,
      this.cache.epochOf(tk),
      `${g.viewKey(proxy)}\0p\0${sorted.join('\0')}`,
      typeUrl,
      () => present(sorted.map((n) => this.cache.get(g, proxy, n))),
    );
  }

  read(proxy: Proxy): Read {
    return (typeUrl, sub) => this.response(proxy, typeUrl, sub).resources;
  }
}

/** From scratch: the generators called directly on the final state. */
function scratchRead(generators: GeneratorTable, ctx: GenerateContext): Read {
  return (typeUrl, sub) => {
    const g = generators.find(ctx.proxy.kind, typeUrl);
    if (!g) throw new Error(`no generator for ${ctx.proxy.kind} ${typeUrl}`);
    const names = new Set(sub.names);
    if (sub.wildcard) for (const n of g.wildcardNames(ctx)) names.add(n);
    return present([...names].map((n) => g.build(ctx, n)));
  };
}

const summary = (list: readonly EncodedResource[]): string[] =>
  list.map((r) => `${r.name} ${r.version}`).sort();

function runSequence(seed: number): void {
  const rnd = random(seed);
  const world = initialWorld();
  const generators = new GeneratorTable(DEFAULT_GENERATORS, false);
  // One serving view per state, as the server shares it between streams (its memo included).
  let serving: ServingView | undefined;
  /** The config the cache was last applied with (what the push loop's previous view holds). */
  let applied = world.config;
  const context = (proxy: Proxy): GenerateContext => {
    serving = servingView({ catalog: world.catalog, config: world.config }, serving);
    return { ...serving, proxy };
  };
  const cache = new ResourceCache(context);
  const view = new IncrementalView(generators, cache, new ResponseCache());
  const all = Object.entries(proxies());
  const held = new Map<string, Held>();
  const log: string[] = [];
  const readSome = (changes: ChangeSet | undefined): void => {
    for (const [name, proxy] of all) {
      if (changes && rnd() < 0.4) continue; // this stream is slow: it reads a later state
      // A push of changed names first (partial EDS/RDS responses), as a stream would send it.
      for (const c of changes?.types ?? []) {
        if (c.kind !== proxy.kind || (c.typeUrl !== ENDPOINT && c.typeUrl !== ROUTE)) continue;
        const subscribed = new Set((held.get(name)?.get(c.typeUrl) ?? []).map((r) => r.name));
        const hit = [...c.names].filter((n) => subscribed.has(n));
        if (hit.length > 0) view.partial(proxy, c.typeUrl, hit);
      }
      held.set(name, follow(view.read(proxy), proxy));
    }
  };
  readSome(undefined);
  for (let step = 0; step < STEPS; step++) {
    // One to three changes merged into one push, as the debouncer merges them.
    let event = change(world, rnd, log);
    while (rnd() < 0.3) event = mergeChanges(event, change(world, rnd, log));
    world.catalog = buildCatalog(world.services.values(), world.endpoints);
    readSome(cache.apply(narrowChange(event, applied, world.config)));
    applied = world.config;
  }

  const replay = `seed ${seed}:\n  ${log.join('\n  ')}`;
  for (const [name, proxy] of all) {
    const ctx = context(proxy);
    const scratch = follow(scratchRead(generators, ctx), proxy);
    const incremental = follow(view.read(proxy), proxy);
    for (const typeUrl of [CLUSTER, ENDPOINT, LISTENER, ROUTE]) {
      const expected = scratch.get(typeUrl) ?? [];
      const where = `${name} ${typeUrl.split('.').at(-1)}, ${replay}`;
      assert.deepEqual(summary(incremental.get(typeUrl) ?? []), summary(expected), where);
      // The shared response: the same version and bytes as a response built from scratch.
      const sub = { wildcard: typeUrl === CLUSTER || typeUrl === LISTENER, names: [] as string[] };
      if (typeUrl === LISTENER) sub.names = listenerNames(proxy);
      if (!sub.wildcard) sub.names = expected.map((r) => r.name).sort();
      const response = view.response(proxy, typeUrl, sub);
      assert.equal(response.version, versionOf(expected), where);
      const fresh = new Map(expected.map((r) => [r.name, r]));
      const inOrder = present(response.resources.map((r) => fresh.get(r.name)));
      assert.deepEqual(
        response.body,
        encodeResponseBody({ versionInfo: versionOf(expected), resources: inOrder, typeUrl }),
        where,
      );
      // Partial responses cached for single names during the sequence hold the current bytes.
      if (!sub.wildcard)
        for (const r of expected)
          assert.deepEqual(summary(view.partial(proxy, typeUrl, [r.name]).resources), summary([r]), where);
    }
  }
}

test(`after ${SEQUENCES} random sequences of ${STEPS} pushes, the caches serve what a from-scratch generation does`, () => {
  for (let seed = 1; seed <= SEQUENCES; seed++) runSequence(seed);
});
