// A differential test of the incremental caches (ResourceCache, ResponseCache): after a random,
// seeded (reproducible) sequence of catalog and mesh-config changes, applied as the ADS server applies
// them (a new catalog and config, then cache.apply of the merged event), with streams reading in
// between, what the caches serve equals what a from-scratch generation for the final state
// produces, resource by resource and response by response, for every proxy of the fixture mesh
// (each Envoy mode, the gateway, the Sidecar-scoped proxy, and proxyless gRPC clients, which also
// ask for an xDS server listener). Each change's event names its keys as a producer does (the test
// knows what it changed): a service's host in `services` and `endpoints`, endpoints in
// `endpoints`, a VirtualService or DestinationRule the resolved hosts of its old and new version in
// `rules` and its kind in `kinds`, every other kind in `kinds`, and `everything` where a per-host
// answer would be wrong (a wildcard host, fault injection switched on or off). So a build that reads
// something it does not record (recording-context.ts) serves a stale resource here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildCatalog } from '../../../model/catalog.js';
import { mergeChanges } from '../../../model/change.js';
import {
  proxyContext,
  servingView,
  type GenerateContext,
  type ResourceGenerator,
  type ServingView,
} from '../../../xds/generators/generator.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../../../xds/generators/index.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { versionOf, type EncodedResource } from '../../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { encodeResponseBody } from '../../../xds/proto/wire.js';
import { proxyFromNode, type Proxy } from '../../../xds/proxy/proxy.js';
import { ResourceCache, typeKey, type ChangeSet } from '../../../xds/server/resource-cache.js';
import { ResponseCache } from '../../../xds/server/response-cache.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../../../xds/generators/grpc/server-listener.js';
import { fixtureProxies } from '../envoy/fixture-mesh.js';
import { change, initialWorld, random } from './change-world.js';

const SEQUENCES = 12;
const STEPS = 25;
/** The last steps of a sequence change only the mesh config. */
const CONFIG_TAIL = 5;

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

/** Where the proxyless clients' xDS servers listen (gRFC A36): the server listener they ask for. */
const GRPC_SERVER_LISTENER = GRPC_SERVER_LISTENER_TEMPLATE.replace('%s', '0.0.0.0:7070');

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

/** Runs one sequence; returns the cache's builds (on first use, and rebuilds a change made). */
function runSequence(seed: number): { misses: number; rebuilds: number } {
  const rnd = random(seed);
  const world = initialWorld();
  const generators = new GeneratorTable(DEFAULT_GENERATORS, false);
  // One serving view per state, as the server shares it between streams (its memo included).
  let serving: ServingView | undefined;
  const context = (proxy: Proxy): GenerateContext => {
    serving = servingView({ catalog: world.catalog, config: world.config }, serving);
    return proxyContext(serving, proxy);
  };
  const cache = new ResourceCache(context);
  const view = new IncrementalView(generators, cache, new ResponseCache());
  const all = Object.entries(proxies());
  // Every proxy's stream holds its views, so a change rebuilds their entries in place (an unheld
  // entry would only be dropped).
  for (const [, proxy] of all)
    for (const typeUrl of [CLUSTER, ENDPOINT, LISTENER, ROUTE])
      cache.retain(view.generator(proxy, typeUrl), proxy);
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
    const configOnly = step >= STEPS - CONFIG_TAIL;
    let event = change(world, rnd, log, configOnly);
    while (rnd() < 0.3) event = mergeChanges(event, change(world, rnd, log, configOnly));
    world.catalog = buildCatalog(world.services.values(), world.endpoints);
    readSome(cache.apply(event));
  }
  const builds = { misses: cache.misses, rebuilds: cache.rebuilds };

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
  return builds;
}

test(`after ${SEQUENCES} random sequences of ${STEPS} pushes, the caches serve what a from-scratch generation does`, (t) => {
  let misses = 0;
  let rebuilds = 0;
  for (let seed = 1; seed <= SEQUENCES; seed++) {
    const builds = runSequence(seed);
    misses += builds.misses;
    rebuilds += builds.rebuilds;
  }
  t.diagnostic(`builds: ${misses} on first use, ${rebuilds} rebuilt by changes`);
});
