// EDS views follow the mesh config (issue #22): without locality rules every client shares one EDS
// view, whatever its locality and labels; a DestinationRule with failover added at runtime moves
// each stream (SotW and delta) to the view of its locality and sends it its own priorities; removing
// the rule brings them back to one view. Raw ADS clients assert the priorities on the wire; the view
// count is read from the server's gauge and the Prometheus metric behind it.
import assert from 'node:assert/strict';
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { PortolanMetrics } from '../../metrics/metrics.js';
import { ENDPOINT } from '../../xds/proto/type-urls.js';
import { decodeAs, type DecodedLoadAssignment } from '../support/decoded-xds.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { decodedResources, RawAdsClient } from '../support/raw-ads-client.js';
import { RawDeltaClient } from '../support/raw-delta-client.js';

const HOST = 'echo.views.internal';
const CLUSTER_NAME = `outbound|50051||${HOST}`;
const EAST = { region: 'us-east', zone: 'us-east-1a', subzone: '' };
const WEST = { region: 'us-west', zone: 'us-west-2a', subzone: '' };
const EAST_IP = '10.9.0.1';
const WEST_IP = '10.9.0.2';

const FAILOVER_RULE = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: echo-views
  namespace: default
spec:
  host: ${HOST}
  trafficPolicy:
    outlierDetection:
      consecutive5xxErrors: 3
      maxEjectionPercent: 100
    loadBalancer:
      localityLbSetting:
        failover:
          - from: us-east
            to: us-west
          - from: us-west
            to: us-east
`;

function node(id: string, locality: typeof EAST, labels: Record<string, string>): object {
  return {
    id,
    cluster: 'test',
    user_agent_name: 'gRPC raw-ads-client',
    locality: { region: locality.region, zone: locality.zone },
    metadata: { NAMESPACE: 'default', LABELS: labels },
  };
}

/** A client's latest load assignment for CLUSTER_NAME, every response ACKed. */
interface Follower {
  readonly name: string;
  latest(): DecodedLoadAssignment | undefined;
}

function followSotw(t: TestContext, plane: InProcessPlane, name: string, n: object): Follower {
  const client = new RawAdsClient(plane.address);
  let latest: DecodedLoadAssignment | undefined;
  let open = true;
  t.after(() => {
    open = false;
    client.close();
  });
  client.send({ node: n, type_url: ENDPOINT, resource_names: [CLUSTER_NAME] });
  void (async () => {
    while (open) {
      const res = await client
        .next(1000)
        .catch((e: Error) => (e.message.startsWith('stream ended') ? null : undefined));
      if (res === null) return;
      if (!res) continue;
      latest = decodedResources<DecodedLoadAssignment>(res)[0];
      client.ack(res, [CLUSTER_NAME]);
    }
  })();
  return { name, latest: () => latest };
}

function followDelta(t: TestContext, plane: InProcessPlane, name: string, n: object): Follower {
  const client = new RawDeltaClient(plane.address);
  let latest: DecodedLoadAssignment | undefined;
  let open = true;
  t.after(() => {
    open = false;
    client.close();
  });
  client.send({ node: n, type_url: ENDPOINT, resource_names_subscribe: [CLUSTER_NAME] });
  void (async () => {
    while (open) {
      const res = await client
        .next(1000)
        .catch((e: Error) => (e.message.startsWith('stream ended') ? null : undefined));
      if (res === null) return;
      if (!res) continue;
      const r = res.resources.find((x) => x.name === CLUSTER_NAME)?.resource;
      if (r) latest = decodeAs<DecodedLoadAssignment>(r.type_url, r.value);
      client.ack(res);
    }
  })();
  return { name, latest: () => latest };
}

/** address → priority in a load assignment (0 when the field is left out). */
function priorities(cla: DecodedLoadAssignment | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const g of cla?.endpoints ?? [])
    for (const e of g.lb_endpoints ?? [])
      out[e.endpoint?.address?.socket_address?.address ?? ''] = g.priority ?? 0;
  return out;
}

function edsViews(plane: InProcessPlane): number {
  return plane.ads.gauges.cachedViews().find((v) => v.kind === 'grpc' && v.typeUrl === ENDPOINT)?.views ?? 0;
}

async function metricViews(metrics: PortolanMetrics): Promise<string> {
  const text = await metrics.registry.metrics();
  return (
    text
      .split('\n')
      .find((l) => l.startsWith('portolan_xds_cache_views{kind="grpc",type="ClusterLoadAssignment"}')) ?? ''
  );
}

test('EDS views follow the locality rules: one without them, per locality with failover, and back', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'portolan-eds-views-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const metrics = new PortolanMetrics();
  const plane = await startInProcessPlane({ configDir: dir, metrics });
  t.after(() => plane.stop());
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 50051)]));
  plane.mock.setEndpoints(HOST, [
    endpoint(EAST_IP, { grpc: 50051 }, { locality: EAST }),
    endpoint(WEST_IP, { grpc: 50051 }, { locality: WEST }),
  ]);
  const config = plane.config ?? assert.fail('config registry');

  // Two east clients with different labels, a west one, and a west delta client.
  const east = [
    followSotw(t, plane, 'east-a', node('east-a', EAST, { app: 'a', instance: 'vm-1' })),
    followSotw(t, plane, 'east-b', node('east-b', EAST, { app: 'b', instance: 'vm-2' })),
  ];
  const west = [
    followSotw(t, plane, 'west', node('west', WEST, { app: 'a', instance: 'vm-3' })),
    followDelta(t, plane, 'west-delta', node('west-delta', WEST, { app: 'c', instance: 'vm-4' })),
  ];
  const all = [...east, ...west];
  const flat = { [EAST_IP]: 0, [WEST_IP]: 0 };

  await eventually(() => {
    for (const f of all)
      assert.deepEqual(priorities(f.latest()), flat, `${f.name}: no priorities without rules`);
  });
  assert.equal(edsViews(plane), 1, 'no locality rule: one EDS view for four clients in two localities');
  assert.match(await metricViews(metrics), / 1$/);

  const before = config.meshConfig().generation;
  await writeFile(join(dir, 'echo-views.yaml'), FAILOVER_RULE);
  await eventually(() => assert.ok(config.meshConfig().generation > before, 'the rule is in force'));
  await eventually(() => {
    for (const f of east)
      assert.deepEqual(priorities(f.latest()), { [EAST_IP]: 0, [WEST_IP]: 1 }, `${f.name}: east first`);
    for (const f of west)
      assert.deepEqual(priorities(f.latest()), { [EAST_IP]: 1, [WEST_IP]: 0 }, `${f.name}: west first`);
  });
  assert.equal(edsViews(plane), 2, 'failover reads the locality alone: one view per client locality');
  assert.match(await metricViews(metrics), / 2$/);

  const removed = config.meshConfig().generation;
  await unlink(join(dir, 'echo-views.yaml'));
  await eventually(() => assert.ok(config.meshConfig().generation > removed, 'the rule is gone'));
  await eventually(() => {
    for (const f of all)
      assert.deepEqual(priorities(f.latest()), flat, `${f.name}: priorities gone with the rule`);
  });
  assert.equal(edsViews(plane), 1, 'back to one view');
});
