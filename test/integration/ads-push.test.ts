// The push machinery on the wire (state of the world): which streams hear about a change and with
// what, debounce merging, make-before-break ordering across service churn, and a stuck client that
// holds back nobody and gets the latest state when it drains.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import {
  lbAddresses,
  type DecodedListener,
  type DecodedLoadAssignment,
  type DecodedRouteConfiguration,
} from '../support/decoded-xds.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import {
  decodedResources,
  grpcNode,
  RawAdsClient,
  resourceNames,
  type DecodedResponse,
} from '../support/raw-ads-client.js';

const host = (i: number): string => `svc-${i}.mock.internal`;
const cluster = (i: number): string => `outbound|7070||${host(i)}`;

async function startPlane(t: TestContext, services: number, pushWindowMs = 0): Promise<InProcessPlane> {
  const plane = await startInProcessPlane({ pushWindowMs });
  t.after(() => plane.stop());
  for (let i = 0; i < services; i++) addService(plane, i);
  return plane;
}

function addService(plane: InProcessPlane, i: number): void {
  plane.mock.putService(mockService(host(i), [servicePort('grpc', 7070)]));
  plane.mock.setEndpoints(host(i), [
    endpoint(`10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`, { grpc: 9000 }),
  ]);
}

function connect(t: TestContext, plane: InProcessPlane): RawAdsClient {
  const client = new RawAdsClient(plane.address);
  t.after(() => client.close());
  return client;
}

async function subscribeAndAck(
  client: RawAdsClient,
  typeUrl: string,
  names: string[],
  nodeId?: string,
): Promise<DecodedResponse> {
  client.send({ ...(nodeId && { node: grpcNode(nodeId) }), type_url: typeUrl, resource_names: names });
  const res = await client.next();
  assert.equal(res.type_url, typeUrl);
  client.ack(res, names);
  return res;
}

test('an endpoint change is pushed as EDS to the streams watching that cluster, and to no other', async (t) => {
  const plane = await startPlane(t, 3);
  const watcher = connect(t, plane);
  const other = connect(t, plane);
  await subscribeAndAck(watcher, ENDPOINT, [cluster(0), cluster(1)], 'watcher');
  await subscribeAndAck(other, ENDPOINT, [cluster(2)], 'other');

  plane.mock.setEndpoints(host(0), [endpoint('10.9.9.9', { grpc: 9000 })]);
  const push = await watcher.next();
  assert.equal(push.type_url, ENDPOINT);
  assert.deepEqual(resourceNames(push), [cluster(0)], 'only the changed load assignment (incremental EDS)');
  assert.deepEqual(lbAddresses(decodedResources<DecodedLoadAssignment>(push)[0]), ['10.9.9.9']);
  await other.expectSilence();
  await watcher.expectSilence();
});

test('a service change reaches only the proxyless streams that name it', async (t) => {
  const plane = await startPlane(t, 2);
  const a = connect(t, plane);
  const b = connect(t, plane);
  const wildcard = connect(t, plane);
  await subscribeAndAck(a, ROUTE, [`${host(0)}:7070`], 'scoped-a');
  await subscribeAndAck(b, ROUTE, [`${host(1)}:7070`], 'scoped-b');
  await subscribeAndAck(wildcard, CLUSTER, [], 'scoped-wildcard');

  plane.mock.putService(mockService(host(1), [servicePort('grpc', 7070), servicePort('grpc2', 7071)]));
  // With a second port the route no longer matches the bare hostname: its bytes change.
  const push = await b.next();
  assert.equal(push.type_url, ROUTE);
  assert.deepEqual(decodedResources<DecodedRouteConfiguration>(push)[0]?.virtual_hosts?.[0]?.domains, [
    `${host(1)}:7070`,
  ]);
  const cds = await wildcard.next();
  assert.equal(cds.type_url, CLUSTER);
  assert.ok(resourceNames(cds).includes(`outbound|7071||${host(1)}`));
  await a.expectSilence();
});

test('changes inside the quiet period are merged into one push carrying the latest state', async (t) => {
  const plane = await startPlane(t, 1, 200);
  // The setup's own changes go out first, in real time.
  await eventually(() => assert.equal(plane.ads.pushes, 1));
  const client = connect(t, plane);
  const first = await subscribeAndAck(client, ENDPOINT, [cluster(0)], 'debounce');
  assert.deepEqual(lbAddresses(decodedResources<DecodedLoadAssignment>(first)[0]), ['10.0.0.1']);

  // The debouncer reads setTimeout and performance.now(): both move only when the test says, so
  // every change below lands inside the quiet period however slow the machine is.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = performance.now();
  const clock = t.mock.method(performance, 'now', () => now);
  const advance = (ms: number): void => {
    now += ms;
    t.mock.timers.tick(ms);
  };
  try {
    for (let i = 1; i <= 5; i++) {
      plane.mock.setEndpoints(host(0), [endpoint(`10.1.0.${i}`, { grpc: 9000 })]);
      advance(20);
      assert.equal(plane.ads.pushes, 1, `no push ${i * 20} ms into the changes`);
    }
    advance(150);
    assert.equal(plane.ads.pushes, 1, 'none 150 ms after the last change (quiet period 200 ms)');
    advance(100);
    assert.equal(plane.ads.pushes, 2, 'one push once the quiet period has passed');
  } finally {
    clock.mock.restore();
    t.mock.timers.reset();
  }

  const push = await client.next();
  assert.notEqual(push.version_info, first.version_info);
  assert.deepEqual(lbAddresses(decodedResources<DecodedLoadAssignment>(push)[0]), ['10.1.0.5']);
  await client.expectSilence();
  assert.equal(plane.ads.pushes, 2);
});

/**
 * A client that follows references as a proxy does (wildcard CDS and LDS, RDS for the routes its
 * listeners name, EDS for its clusters), ACKs everything, and checks the make-before-break rule on
 * every response: a route never names a cluster it does not hold, and a cluster is never withdrawn
 * while a route it holds still names it.
 */
class FollowingClient {
  readonly violations: string[] = [];
  clusters = new Set<string>();
  listeners = new Map<string, string>(); // listener → route name
  routes = new Map<string, string[]>(); // route name → clusters
  responses = 0;

  constructor(private readonly client: RawAdsClient) {}

  start(nodeId: string): void {
    this.client.send({ node: grpcNode(nodeId), type_url: CLUSTER, resource_names: [] });
    this.client.send({ type_url: LISTENER, resource_names: [] });
  }

  /** Handles responses until none arrives for `quietMs`. */
  async run(quietMs: number): Promise<void> {
    for (;;) {
      let res: DecodedResponse;
      try {
        res = await this.client.next(quietMs);
      } catch {
        return;
      }
      this.handle(res);
    }
  }

  private liveRoutes(): Set<string> {
    return new Set(this.listeners.values());
  }

  private handle(res: DecodedResponse): void {
    this.responses += 1;
    if (res.type_url === CLUSTER) {
      const next = new Set(resourceNames(res));
      for (const c of this.clusters) {
        if (next.has(c)) continue;
        for (const r of this.liveRoutes())
          if (this.routes.get(r)?.includes(c))
            this.violations.push(`cluster ${c} withdrawn while route ${r} names it`);
      }
      this.clusters = next;
      this.client.ack(res);
      this.client.send({
        type_url: ENDPOINT,
        resource_names: [...next].sort(),
        version_info: '',
        response_nonce: '',
      });
    } else if (res.type_url === LISTENER) {
      this.listeners = new Map(
        decodedResources<DecodedListener>(res).map((l) => [
          l.name ?? '',
          l.api_listener?.api_listener?.rds?.route_config_name ?? '',
        ]),
      );
      for (const r of [...this.routes.keys()]) if (!this.liveRoutes().has(r)) this.routes.delete(r);
      this.client.ack(res);
      this.client.ack(
        { ...res, type_url: ROUTE, version_info: '', nonce: '' },
        [...this.liveRoutes()].sort(),
      );
    } else if (res.type_url === ROUTE) {
      for (const rc of decodedResources<DecodedRouteConfiguration>(res)) {
        const targets = (rc.virtual_hosts ?? []).flatMap((v) =>
          (v.routes ?? []).map((r) => r.route?.cluster ?? ''),
        );
        for (const c of targets)
          if (!this.clusters.has(c))
            this.violations.push(`route ${rc.name} names cluster ${c} before it was sent`);
        this.routes.set(rc.name ?? '', targets);
      }
      this.client.ack(res, [...this.liveRoutes()].sort());
    } else {
      this.client.ack(res, [...this.clusters].sort());
    }
  }
}

test('across services added and removed, no route names an unsent cluster and no cluster goes before its route', async (t) => {
  const plane = await startPlane(t, 3);
  const follower = new FollowingClient(connect(t, plane));
  follower.start('follower');
  await follower.run(300);
  assert.equal(follower.listeners.size, 3);

  const churn = (async () => {
    for (let i = 3; i < 15; i++) {
      addService(plane, i);
      await sleep(5 + (i % 3) * 15);
      plane.mock.deleteService(host(i - 3));
      await sleep(5 + (i % 4) * 10);
    }
  })();
  const following = follower.run(1500);
  await churn;
  await following;
  assert.deepEqual(follower.violations, []);
  assert.deepEqual([...follower.clusters].sort(), [cluster(12), cluster(13), cluster(14)].sort());
  assert.deepEqual([...follower.listeners.keys()].sort(), [12, 13, 14].map((i) => `${host(i)}:7070`).sort());
  assert.ok(follower.responses > 20, `responses seen: ${follower.responses}`);
});

test('a removed cluster is withdrawn only after the listener that used it', async (t) => {
  const plane = await startPlane(t, 2);
  const client = connect(t, plane);
  const cds = await subscribeAndAck(client, CLUSTER, [], 'mbb');
  await subscribeAndAck(client, LISTENER, [`${host(0)}:7070`, `${host(1)}:7070`]);
  assert.equal(cds.resources.length, 2);

  plane.mock.deleteService(host(1));
  const order: string[] = [];
  for (;;) {
    let res: DecodedResponse;
    try {
      res = await client.next(500);
    } catch {
      break;
    }
    order.push(`${res.type_url === CLUSTER ? 'CDS' : 'LDS'}:${resourceNames(res).length}`);
    client.ack(res, res.type_url === LISTENER ? [`${host(0)}:7070`, `${host(1)}:7070`] : []);
  }
  // CDS first still holding the removed cluster (nothing changed for this stream), then LDS without
  // the listener, then CDS without the cluster.
  assert.deepEqual(
    order.filter((o) => o !== 'CDS:2'),
    ['LDS:1', 'CDS:1'],
  );
});

test('a client that stops reading holds back no one and, when it drains, gets the latest state, not a backlog', async (t) => {
  const plane = await startPlane(t, 1500);
  const stuck = connect(t, plane);
  const healthy = connect(t, plane);
  await subscribeAndAck(stuck, CLUSTER, [], 'stuck');
  await subscribeAndAck(healthy, CLUSTER, [], 'healthy');
  stuck.pause();

  let last: DecodedResponse | undefined;
  for (let i = 1500; i < 1520; i++) {
    addService(plane, i);
    last = await healthy.next(10_000);
    healthy.ack(last);
    assert.ok(resourceNames(last).includes(cluster(i)), `healthy got service ${i}`);
  }
  const conn = plane.ads.connectionList().find((c) => c.proxy?.id === 'stuck');
  assert.ok(conn);
  assert.ok(conn.pump.busy, 'the stuck stream still has a write outstanding');

  stuck.resume();
  const received: DecodedResponse[] = [];
  await eventually(async () => {
    for (;;) {
      let res: DecodedResponse;
      try {
        res = await stuck.next(200);
      } catch {
        break;
      }
      received.push(res);
      stuck.ack(res);
    }
    assert.equal(received.at(-1)?.version_info, last?.version_info);
  });
  assert.ok(received.length < 20, `responses after draining: ${received.length} (20 pushes happened)`);
});
