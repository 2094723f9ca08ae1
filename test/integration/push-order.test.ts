// The push order on the wire (make-before-break, xds/server/make-before-break.ts), SotW and delta: an
// Envoy-style client following wildcard CDS and LDS, and RDS and EDS by name, holding back its CDS
// ACK until its new clusters have their load assignments (as Envoy does), must see a new cluster
// and its endpoints before any listener or route naming it; and must have been sent the routes that
// no longer name a cluster before the cluster is removed. Each step waits for the responses that
// complete it (no quiet periods), checking every response on the way.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { decodeAny } from '../../xds/proto/protos.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { RawAdsClient, type DecodedResponse } from '../support/raw-ads-client.js';
import { RawDeltaClient, type DecodedDeltaResponse } from '../support/raw-delta-client.js';

const host = (name: string): string => `${name}.mesh.internal`;
const clusterOf = (name: string): string => `outbound|8080||${host(name)}`;

function addService(plane: InProcessPlane, name: string, ip: string): void {
  plane.mock.putService(mockService(host(name), [servicePort('http', 8080, 'HTTP')]));
  plane.mock.setEndpoints(host(name), [endpoint(ip, { http: 8080 })]);
}

async function startPlane(t: TestContext): Promise<InProcessPlane> {
  const plane = await startInProcessPlane();
  t.after(() => plane.stop());
  addService(plane, 'web', '10.0.0.1');
  return plane;
}

const envoyNode = (id: string): object => ({
  id: `sidecar~127.0.0.1~${id}~default.svc`,
  cluster: 'web',
  user_agent_name: 'envoy',
  metadata: { fields: { INTERCEPTION_MODE: { stringValue: 'REDIRECT' } } },
});

/** A resource as the client reads it: its name, version (bytes or delta version) and decoded form. */
interface Resource {
  readonly name: string;
  readonly version: string;
  readonly decoded: Record<string, unknown>;
}

/** The route config names and cluster names anywhere in a listener or route configuration. */
function references(decoded: unknown): { routes: string[]; clusters: string[] } {
  const routes: string[] = [];
  const clusters: string[] = [];
  const walk = (v: unknown, key: string): void => {
    if (Array.isArray(v)) for (const x of v) walk(x, key);
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
    else if (typeof v === 'string' && key === 'route_config_name') routes.push(v);
    else if (typeof v === 'string' && key === 'cluster') clusters.push(v);
  };
  walk(decoded, '');
  return { routes, clusters };
}

/**
 * What an Envoy holds, and the make-before-break checks on every response. The wire (SotW or delta)
 * is the caller's: it passes what each response adds, updates and removes.
 */
class EnvoyView {
  readonly violations: string[] = [];
  /** Every response, in wire order (for the failure message). */
  readonly wire: string[] = [];
  readonly clusters = new Map<string, Resource>();
  /** Clusters whose load assignment the client holds. */
  readonly endpoints = new Set<string>();
  /** EDS clusters added and not yet sent their load assignment: unusable, and the CDS ACK waits. */
  readonly warming = new Set<string>();
  readonly listeners = new Map<string, { routes: string[]; clusters: string[] }>();
  readonly routes = new Map<string, string[]>();

  edsClusters(): string[] {
    return [...this.clusters.values()]
      .filter((c) => c.decoded.type === 'EDS')
      .map((c) => c.name)
      .sort();
  }

  routeNames(): string[] {
    return [...new Set([...this.listeners.values()].flatMap((l) => l.routes))].sort();
  }

  routesNaming(cluster: string): string[] {
    const out: string[] = [];
    for (const [name, l] of this.listeners) if (l.clusters.includes(cluster)) out.push(`listener ${name}`);
    for (const [name, clusters] of this.routes) if (clusters.includes(cluster)) out.push(`route ${name}`);
    return out;
  }

  clustersChanged(changed: readonly Resource[], removed: readonly string[]): void {
    this.wire.push(`CDS +${changed.map((r) => r.name).join(',')} -${removed.join(',')}`);
    for (const name of removed) {
      const naming = this.routesNaming(name);
      if (naming.length > 0)
        this.violations.push(`cluster ${name} removed while ${naming.join(', ')} names it`);
      this.clusters.delete(name);
      this.endpoints.delete(name);
      this.warming.delete(name);
    }
    for (const r of changed) {
      // Only a new cluster is out of use until its endpoints come; an updated one keeps serving.
      if (!this.clusters.has(r.name) && r.decoded.type === 'EDS') this.warming.add(r.name);
      this.clusters.set(r.name, r);
    }
  }

  endpointsSent(names: readonly string[]): void {
    this.wire.push(`EDS ${names.join(',')}`);
    for (const n of names) {
      this.endpoints.add(n);
      this.warming.delete(n);
    }
  }

  private check(what: string, clusters: readonly string[]): void {
    for (const c of clusters) {
      if (!this.clusters.has(c)) this.violations.push(`${what} names cluster ${c} before it was sent`);
      else if (this.warming.has(c))
        this.violations.push(`${what} names cluster ${c} before its endpoints were sent`);
    }
  }

  listenersChanged(changed: readonly Resource[], removed: readonly string[]): void {
    this.wire.push(`LDS +${changed.map((r) => r.name).join(',')} -${removed.join(',')}`);
    for (const n of removed) this.listeners.delete(n);
    for (const r of changed) {
      const refs = references(r.decoded);
      this.check(`listener ${r.name}`, refs.clusters);
      this.listeners.set(r.name, refs);
    }
    for (const name of [...this.routes.keys()])
      if (!this.routeNames().includes(name)) this.routes.delete(name);
  }

  routesChanged(changed: readonly Resource[], removed: readonly string[]): void {
    this.wire.push(
      `RDS ${changed.map((r) => `${r.name}→${references(r.decoded).clusters.join('+')}`).join(',')}`,
    );
    for (const n of removed) this.routes.delete(n);
    for (const r of changed) {
      const { clusters } = references(r.decoded);
      this.check(`route ${r.name}`, clusters);
      this.routes.set(r.name, clusters);
    }
  }

  /** Whether the client routes to `cluster` and holds its endpoints. */
  serves(cluster: string): boolean {
    return this.endpoints.has(cluster) && this.routesNaming(cluster).length > 0;
  }

  /** Whether `cluster` is gone, and nothing names it. */
  forgot(cluster: string): boolean {
    return !this.clusters.has(cluster) && this.routesNaming(cluster).length === 0;
  }
}

/** One wire protocol of an Envoy-like client: handle the next response, reacting as Envoy does. */
interface EnvoyClient {
  readonly view: EnvoyView;
  start(): void;
  step(): Promise<void>;
}

/** Handles responses until `done` holds; each wait is bounded (a missing response fails). */
async function until(client: EnvoyClient, what: string, done: () => boolean): Promise<void> {
  for (let i = 0; !done(); i++) {
    if (i >= 100) assert.fail(`${what}: not after 100 responses (${client.view.wire.join(' | ')})`);
    try {
      await client.step();
    } catch (err) {
      assert.fail(`${what}: ${(err as Error).message} (${client.view.wire.join(' | ')})`);
    }
  }
}

function decode(typeUrl: string, value: Uint8Array): Record<string, unknown> {
  return decodeAny(typeUrl, value);
}

const bytesOf = (value: Uint8Array): string => Buffer.from(value).toString('base64');

class SotwEnvoy implements EnvoyClient {
  readonly view = new EnvoyView();
  private held: DecodedResponse | undefined;
  private last = new Map<string, DecodedResponse>();
  private subscribed = new Map<string, string[]>();

  constructor(private readonly client: RawAdsClient) {}

  start(): void {
    this.client.send({ node: envoyNode('order-sotw'), type_url: CLUSTER, resource_names: [] });
  }

  async step(): Promise<void> {
    const res = await this.client.next();
    this.last.set(res.type_url, res);
    const resources = res.resources.map((r) => {
      const decoded = decode(r.type_url, r.value);
      const name = (decoded.name ?? decoded.cluster_name ?? '') as string;
      return { name, version: bytesOf(r.value), decoded };
    });
    const view = this.view;
    if (res.type_url === CLUSTER) {
      const names = new Set(resources.map((r) => r.name));
      const changed = resources.filter((r) => view.clusters.get(r.name)?.version !== r.version);
      view.clustersChanged(
        changed,
        [...view.clusters.keys()].filter((n) => !names.has(n)),
      );
      this.subscribe(ENDPOINT, view.edsClusters());
      // Envoy holds back its CDS ACK until its new clusters are warm.
      this.held = res;
      this.ackWarm();
      if (!this.subscribed.has(LISTENER)) this.subscribe(LISTENER, []);
    } else if (res.type_url === ENDPOINT) {
      view.endpointsSent(resources.map((r) => r.name));
      this.ack(res);
      this.ackWarm();
    } else if (res.type_url === LISTENER) {
      const names = new Set(resources.map((r) => r.name));
      view.listenersChanged(
        resources,
        [...view.listeners.keys()].filter((n) => !names.has(n)),
      );
      this.ack(res);
      this.subscribe(ROUTE, view.routeNames());
    } else if (res.type_url === ROUTE) {
      // SotW RDS may carry only the changed route configurations.
      view.routesChanged(resources, []);
      this.ack(res);
    }
  }

  private ackWarm(): void {
    if (!this.held || this.view.warming.size > 0) return;
    this.ack(this.held);
    this.held = undefined;
  }

  private ack(res: DecodedResponse): void {
    this.client.ack(res, this.subscribed.get(res.type_url) ?? []);
  }

  /** A new subscription goes out with the last response's version and nonce, as Envoy sends it. */
  private subscribe(typeUrl: string, names: string[]): void {
    const before = this.subscribed.get(typeUrl);
    if (before && before.join() === names.join()) return;
    this.subscribed.set(typeUrl, names);
    const last = this.last.get(typeUrl);
    this.client.send({
      type_url: typeUrl,
      resource_names: names,
      version_info: last?.version_info ?? '',
      response_nonce: last?.nonce ?? '',
    });
  }
}

class DeltaEnvoy implements EnvoyClient {
  readonly view = new EnvoyView();
  private held: DecodedDeltaResponse | undefined;
  private subscribed = new Map<string, string[]>();

  constructor(private readonly client: RawDeltaClient) {}

  start(): void {
    this.client.send({ node: envoyNode('order-delta'), type_url: CLUSTER });
  }

  async step(): Promise<void> {
    const res = await this.client.next();
    const resources = res.resources.map((r) => ({
      name: r.name,
      version: r.version,
      decoded: decode(res.type_url, r.resource?.value ?? new Uint8Array()),
    }));
    const removed = res.removed_resources;
    const view = this.view;
    if (res.type_url === CLUSTER) {
      view.clustersChanged(resources, removed);
      this.subscribe(ENDPOINT, view.edsClusters());
      this.held = res;
      this.ackWarm();
      if (!this.subscribed.has(LISTENER)) this.client.send({ type_url: LISTENER });
      this.subscribed.set(LISTENER, []);
    } else if (res.type_url === ENDPOINT) {
      view.endpointsSent(resources.map((r) => r.name));
      this.client.ack(res);
      this.ackWarm();
    } else if (res.type_url === LISTENER) {
      view.listenersChanged(resources, removed);
      this.client.ack(res);
      this.subscribe(ROUTE, view.routeNames());
    } else if (res.type_url === ROUTE) {
      view.routesChanged(resources, removed);
      this.client.ack(res);
    }
  }

  private ackWarm(): void {
    if (!this.held || this.view.warming.size > 0) return;
    this.client.ack(this.held);
    this.held = undefined;
  }

  private subscribe(typeUrl: string, names: string[]): void {
    const before = this.subscribed.get(typeUrl) ?? [];
    const add = names.filter((n) => !before.includes(n));
    const drop = before.filter((n) => !names.includes(n));
    this.subscribed.set(typeUrl, names);
    if (add.length === 0 && drop.length === 0) return;
    this.client.send({ type_url: typeUrl, resource_names_subscribe: add, resource_names_unsubscribe: drop });
  }
}

async function pushOrder(plane: InProcessPlane, client: EnvoyClient): Promise<void> {
  const { view } = client;
  client.start();
  await until(client, 'connected: web routed with its endpoints', () => view.serves(clusterOf('web')));

  addService(plane, 'shop', '10.0.0.2');
  await until(client, 'shop added: routed with its endpoints', () => view.serves(clusterOf('shop')));
  assert.deepEqual(view.violations, [], view.wire.join(' | '));

  plane.mock.deleteService(host('web'));
  await until(client, 'web removed: cluster and routes gone', () => view.forgot(clusterOf('web')));
  assert.deepEqual(view.violations, [], view.wire.join(' | '));
  assert.ok(view.serves(clusterOf('shop')), 'shop is still served');
}

test('SotW: a new cluster and its endpoints reach an Envoy before any route naming it, and a cluster goes after its routes', async (t) => {
  const plane = await startPlane(t);
  const raw = new RawAdsClient(plane.address);
  t.after(() => raw.close());
  await pushOrder(plane, new SotwEnvoy(raw));
});

test('delta: a new cluster and its endpoints reach an Envoy before any route naming it, and a cluster goes after its routes', async (t) => {
  const plane = await startPlane(t);
  const raw = new RawDeltaClient(plane.address);
  t.after(() => raw.close());
  await pushOrder(plane, new DeltaEnvoy(raw));
});
