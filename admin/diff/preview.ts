// What each connected proxy would be sent under a candidate serving view, against what it holds now
// (`portolan diff`): for every stream with a proxy, every LDS/RDS/CDS/EDS name it subscribes to
// (a wildcard resolved as the generator resolves it) is built with the raw generators and compared,
// by version, with the resource the stream was last sent. Nothing is sent and nothing in the server
// changes: the streams are only read (StreamView).
//
// Cost: builds are shared between streams whose proxies have the same view key, as the resource
// cache shares them when serving, so 2,000 proxies of a few kinds cost a few builds per name; what
// remains per stream is a lookup and a version comparison per subscribed name.
//
// A built resource the proxy's client would reject (xds/validate/acceptance.ts) is a problem, not a
// change: the client would keep its last good one. A proxyless gRPC client subscribes by name as it
// goes (listener → its route → the route's clusters → their endpoints): the names it would ask for
// next are followed and listed as additions.
import type { DiffChange, DiffOp, DiffProxy, DiffProxyProblem, DiffType } from '../../model/admin-api.js';
import {
  proxyContext,
  type GenerateContext,
  type GeneratorLookup,
  type ResourceGenerator,
  type ServingView,
} from '../../xds/generators/generator.js';
import { decodeAny } from '../../xds/proto/protos.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import type { Proxy } from '../../xds/proxy/proxy.js';
import type { StreamView } from '../../xds/server/observer.js';
import { clientRejection } from '../../xds/validate/acceptance.js';
import { resourceDiff } from './resource-diff.js';

/** The types a diff lists, in its order. */
const TYPES: readonly (readonly [DiffType, string])[] = [
  ['LDS', LISTENER],
  ['RDS', ROUTE],
  ['CDS', CLUSTER],
  ['EDS', ENDPOINT],
];
const TYPE_ORDER = new Map(TYPES.map(([type], i) => [type, i]));
/** A proxyless client's chain of asks: the resources of one type name those it asks for next. */
const FOLLOW_ON: readonly (readonly [string, DiffType, string])[] = [
  [LISTENER, 'RDS', ROUTE],
  [ROUTE, 'CDS', CLUSTER],
  [CLUSTER, 'EDS', ENDPOINT],
];

/** Whether a proxy's client accepts a resource (xds/validate/acceptance.ts clientRejection). */
export type ClientRejection = typeof clientRejection;

export interface PreviewOptions {
  /** Called between streams: throws to stop (the deadline), may pause to let the event loop run. */
  readonly checkpoint?: () => Promise<void>;
  /** Tests only: the clients' verdicts (default: clientRejection). */
  readonly rejection?: ClientRejection;
}

export interface Preview {
  /** Affected proxies only, by id. */
  readonly proxies: readonly DiffProxy[];
  /** By proxy, type, name. */
  readonly problems: readonly DiffProxyProblem[];
}

type Resource = Record<string, unknown>;

/** Builds, wildcard lists and verdicts of one preview, shared across its streams. */
class SharedBuilds {
  private readonly builds = new Map<string, EncodedResource | undefined>();
  private readonly wildcards = new Map<string, readonly string[]>();
  private readonly verdicts = new Map<string, string | undefined>();
  private readonly decoded = new WeakMap<EncodedResource, Resource>();
  private readonly diffs = new Map<string, string>();
  /** Builds actually run (the rest were shared). */
  buildCount = 0;

  constructor(
    private readonly view: ServingView,
    private readonly rejects: ClientRejection,
  ) {}

  /** The key the cache shares a generator's builds by for `proxy` (xds/server/cache-shares.ts). */
  viewKey(generator: ResourceGenerator, proxy: Proxy): string {
    const key = generator.viewKeyReads ? generator.viewKey(proxy, this.view) : generator.viewKey(proxy);
    return `${generator.proxyKind}\0${generator.typeUrl}\0${key}`;
  }

  build(
    generator: ResourceGenerator,
    viewKey: string,
    ctx: GenerateContext,
    name: string,
  ): EncodedResource | undefined {
    const key = `${viewKey}\0${name}`;
    if (this.builds.has(key)) return this.builds.get(key);
    this.buildCount += 1;
    const built = generator.build(ctx, name);
    this.builds.set(key, built);
    return built;
  }

  wildcardNames(generator: ResourceGenerator, viewKey: string, ctx: GenerateContext): readonly string[] {
    let names = this.wildcards.get(viewKey);
    if (!names) this.wildcards.set(viewKey, (names = generator.wildcardNames(ctx)));
    return names;
  }

  /** clientRejection, once per resource and client (the acceptance rules key on the user agent). */
  rejection(proxy: Proxy, viewKey: string, resource: EncodedResource): string | undefined {
    const key = `${viewKey}\0${resource.name}\0${resource.version}\0${proxy.userAgent}\0${proxy.userAgentVersion}`;
    if (this.verdicts.has(key)) return this.verdicts.get(key);
    const verdict = this.rejects(proxy, resource.typeUrl, resource);
    this.verdicts.set(key, verdict);
    return verdict;
  }

  decode(resource: EncodedResource): Resource {
    let value = this.decoded.get(resource);
    if (!value) this.decoded.set(resource, (value = decodeAny(resource.typeUrl, resource.value)));
    return value;
  }

  diff(before: EncodedResource, after: EncodedResource): string {
    const key = `${after.typeUrl}\0${after.name}\0${before.version}\0${after.version}`;
    let text = this.diffs.get(key);
    if (text === undefined)
      this.diffs.set(key, (text = resourceDiff(this.decode(before), this.decode(after))));
    return text;
  }
}

/** What every stream with a proxy would be sent under `view`, compared with what it holds. */
export async function previewStreams(
  streams: readonly StreamView[],
  view: ServingView,
  generators: GeneratorLookup,
  options: PreviewOptions = {},
): Promise<Preview & { readonly builds: number }> {
  const shared = new SharedBuilds(view, options.rejection ?? clientRejection);
  const changes = new Map<string, Map<string, DiffChange>>();
  const problems = new Map<string, DiffProxyProblem>();
  for (const stream of streams) {
    await options.checkpoint?.();
    const proxy = stream.proxy;
    if (!proxy) continue;
    const found = previewStream(stream, proxy, view, generators, shared);
    // A node on two streams is one proxy: its changes and problems are listed once.
    let mine = changes.get(proxy.id);
    for (const c of found.changes) {
      if (!mine) changes.set(proxy.id, (mine = new Map<string, DiffChange>()));
      mine.set(`${c.op}\0${c.type}\0${c.name}`, c);
    }
    for (const p of found.problems) problems.set(`${p.proxy}\0${p.type}\0${p.name}`, p);
  }
  const proxies = [...changes]
    .sort(([a], [b]) => compare(a, b))
    .map(([id, list]) => ({ id, changes: [...list.values()].sort(byTypeThenName) }));
  const problemList = [...problems.values()].sort(
    (a, b) => compare(a.proxy, b.proxy) || byTypeThenName(a, b),
  );
  return { proxies, problems: problemList, builds: shared.buildCount };
}

/** One stream's changes and its client's rejections. */
function previewStream(
  stream: StreamView,
  proxy: Proxy,
  view: ServingView,
  generators: GeneratorLookup,
  shared: SharedBuilds,
): { changes: DiffChange[]; problems: DiffProxyProblem[] } {
  const ctx = proxyContext(view, proxy);
  const changes: DiffChange[] = [];
  const problems: DiffProxyProblem[] = [];
  /** Per type: what the client would hold (accepted builds), to follow a proxyless client's next asks. */
  const wouldHold = new Map<string, EncodedResource[]>();
  const subscribed = new Map<string, ReadonlySet<string> | 'wildcard'>();

  const consider = (
    type: DiffType,
    generator: ResourceGenerator,
    viewKey: string,
    name: string,
    held: EncodedResource | undefined,
  ): void => {
    const built = shared.build(generator, viewKey, ctx, name);
    if (built) {
      const rejected = shared.rejection(proxy, viewKey, built);
      if (rejected !== undefined) {
        problems.push({ proxy: proxy.id, type, name, message: rejected });
        return;
      }
      let list = wouldHold.get(generator.typeUrl);
      if (!list) wouldHold.set(generator.typeUrl, (list = []));
      list.push(built);
    }
    const op: DiffOp | undefined = built
      ? held
        ? held.version === built.version
          ? undefined
          : 'change'
        : 'add'
      : held
        ? 'remove'
        : undefined;
    if (op)
      changes.push({
        op,
        type,
        name,
        diff: op === 'change' && held && built ? shared.diff(held, built) : '',
      });
  };

  for (const [type, typeUrl] of TYPES) {
    const subscription = stream.subscription(typeUrl);
    const generator = generators.find(proxy.kind, typeUrl);
    if (!subscription || !generator) continue;
    const viewKey = shared.viewKey(generator, proxy);
    const held = new Map(stream.heldResources(typeUrl).map((r) => [r.name, r]));
    const names = new Set(subscription.names);
    if (subscription.wildcard) for (const n of shared.wildcardNames(generator, viewKey, ctx)) names.add(n);
    subscribed.set(typeUrl, subscription.wildcard ? 'wildcard' : subscription.names);
    for (const name of names) consider(type, generator, viewKey, name, held.get(name));
    // Under a wildcard, what is no longer in the list is removed; a named subscription's removals
    // are the names above that no longer build.
    if (subscription.wildcard)
      for (const [name, resource] of held)
        if (!names.has(name)) consider(type, generator, viewKey, name, resource);
  }

  if (proxy.kind === 'grpc') {
    // The names a proxyless client asks for next, type by type down the chain (each new one an add).
    for (const [fromUrl, type, typeUrl] of FOLLOW_ON) {
      const mine = subscribed.get(typeUrl);
      const generator = generators.find(proxy.kind, typeUrl);
      if (mine === 'wildcard' || !generator) continue;
      const next = new Set<string>();
      for (const r of wouldHold.get(fromUrl) ?? [])
        for (const n of namesNamed(fromUrl, shared.decode(r))) next.add(n);
      const viewKey = shared.viewKey(generator, proxy);
      for (const name of next) if (!mine?.has(name)) consider(type, generator, viewKey, name, undefined);
    }
  }
  return { changes, problems };
}

/** The resources of the next type that `resource` (of `typeUrl`, decoded) names. */
function namesNamed(typeUrl: string, resource: Resource): string[] {
  switch (typeUrl) {
    case LISTENER: {
      const hcm = obj(obj(resource.api_listener).api_listener);
      const name = obj(hcm.rds).route_config_name;
      return typeof name === 'string' && name ? [name] : [];
    }
    case ROUTE:
      return list(resource.virtual_hosts).flatMap((vh) =>
        list(vh.routes).flatMap((r) => {
          const route = obj(r.route);
          const weighted = list(obj(route.weighted_clusters).clusters).map((w) => w.name);
          return [route.cluster, ...weighted].filter((n): n is string => typeof n === 'string' && n !== '');
        }),
      );
    case CLUSTER: {
      const eds = resource.eds_cluster_config;
      if (!eds) return [];
      const service = obj(eds).service_name;
      const name = typeof service === 'string' && service ? service : resource.name;
      return typeof name === 'string' ? [name] : [];
    }
    default:
      return [];
  }
}

function byTypeThenName(a: { type: DiffType; name: string }, b: { type: DiffType; name: string }): number {
  return (TYPE_ORDER.get(a.type) ?? 0) - (TYPE_ORDER.get(b.type) ?? 0) || compare(a.name, b.name);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function list(v: unknown): Resource[] {
  return Array.isArray(v) ? (v as Resource[]) : [];
}

function obj(v: unknown): Resource {
  return v && typeof v === 'object' ? (v as Resource) : {};
}
