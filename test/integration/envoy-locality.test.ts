// Locality load balancing for Envoy on the ADS wire: two sidecars in different regions subscribe
// like Envoy (CDS, then EDS for the clusters) under examples/traffic/locality-failover.yaml and each
// gets its own priorities (its locality from node.locality for one, from the LABELS topology keys
// for the other), an outlier-detecting, locality-weighted cluster, and a set that passes the
// validator and the consistency check; an endpoint change re-ranks what each holds; and the admin
// server's /debug/config_dump shows every locality group's priority for that proxy.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AdminServer } from '../../admin/admin-server.js';
import { silentLogger } from '../../log/logger.js';
import { TOPOLOGY_REGION, TOPOLOGY_ZONE } from '../../mesh/topology.js';
import { decodeAny } from '../../xds/proto/protos.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';
import { checkConsistency } from '../../xds/validate/consistency.js';
import { validateEncoded } from '../../xds/validate/pgv-validator.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { RawAdsClient, resourceNames, type DecodedResponse } from '../support/raw-ads-client.js';

const HOST = 'echo.example.internal';
const CLUSTER_NAME = `outbound|50051||${HOST}`;
const EAST_A = { region: 'us-east', zone: 'us-east-1a', subzone: '' };
const EAST_B = { region: 'us-east', zone: 'us-east-1b', subzone: '' };
const WEST = { region: 'us-west', zone: 'us-west-2a', subzone: '' };

let plane: InProcessPlane;
let admin: AdminServer;
let adminUrl: string;
let dir: string;
const clients: RawAdsClient[] = [];

function repoRoot(): string {
  for (let d = dirname(fileURLToPath(import.meta.url)); d !== dirname(d); d = dirname(d))
    if (existsSync(join(d, 'examples', 'traffic'))) return d;
  return resolve('.');
}

/** An Envoy node; metadata as a protobuf Struct, LABELS as a nested struct. */
function envoyNode(id: string, locality: object, labels: Record<string, string> = {}): object {
  const strings = (m: Record<string, string>) =>
    Object.fromEntries(Object.entries(m).map(([k, v]) => [k, { stringValue: v }]));
  return {
    id,
    cluster: 'web',
    user_agent_name: 'envoy',
    locality,
    metadata: {
      fields: {
        INTERCEPTION_MODE: { stringValue: 'REDIRECT' },
        LABELS: { structValue: { fields: strings(labels) } },
      },
    },
  };
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portolan-envoy-locality-'));
  await writeFile(
    join(dir, 'echo-locality.yaml'),
    readFileSync(join(repoRoot(), 'examples', 'traffic', 'locality-failover.yaml')),
  );
  plane = await startInProcessPlane({ configDir: dir });
  await eventually(() => assert.equal(plane.config?.meshConfig().destinationRules.length, 1));
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 50051)]));
  plane.mock.setEndpoints(HOST, [
    endpoint('127.0.0.1', { grpc: 50051 }, { locality: EAST_A }),
    endpoint('127.0.0.2', { grpc: 50051 }, { locality: EAST_B }),
    endpoint('127.0.0.3', { grpc: 50051 }, { locality: WEST }),
  ]);
  admin = new AdminServer({
    discovery: plane.discovery,
    ads: plane.ads,
    ...(plane.config && { config: plane.config }),
    logger: silentLogger,
  });
  const address = await admin.listen('127.0.0.1', 0);
  adminUrl = `http://127.0.0.1:${address.port}`;
});

after(async () => {
  for (const c of clients) c.close();
  await admin.close();
  await plane.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Subscribed {
  readonly client: RawAdsClient;
  readonly cds: DecodedResponse;
  readonly eds: DecodedResponse;
}

/** CDS wildcard, then EDS for its clusters, ACKing both, as Envoy does. */
async function subscribe(node: object): Promise<Subscribed> {
  const client = new RawAdsClient(plane.address);
  clients.push(client);
  client.send({ node, type_url: CLUSTER, resource_names: [] });
  const cds = await client.next();
  const edsNames = resourceNames(cds).filter((n) => n.startsWith('outbound|'));
  client.send({ type_url: ENDPOINT, resource_names: edsNames });
  client.ack(cds);
  const eds = await client.next();
  assert.equal(eds.type_url, ENDPOINT);
  client.ack(eds, edsNames);
  return { client, cds, eds };
}

type Obj = Record<string, unknown>;

function decoded(res: DecodedResponse, name: string): Obj {
  for (const r of res.resources) {
    const d = decodeAny(r.type_url, r.value) as Obj;
    if (d.name === name || d.cluster_name === name) return d;
  }
  return assert.fail(`${name} not in the response`);
}

/** `zone` → priority of each locality group (absent priority is 0). */
function priorities(assignment: Obj): Record<string, number> {
  const out: Record<string, number> = {};
  for (const group of assignment.endpoints as Obj[]) {
    const locality = group.locality as { zone: string };
    out[locality.zone] = (group.priority as number | undefined) ?? 0;
  }
  return out;
}

function asEncoded(res: DecodedResponse): EncodedResource[] {
  return res.resources.map((r) => {
    const d = decodeAny(r.type_url, r.value) as { name?: string; cluster_name?: string };
    return { name: d.name ?? d.cluster_name ?? '', typeUrl: r.type_url, value: r.value, version: '' };
  });
}

test('each Envoy sidecar gets priorities by its own locality, an ejecting locality-weighted cluster, a valid set', async () => {
  const east = await subscribe(
    envoyNode('sidecar~127.0.1.1~web-east~default.svc', { region: 'us-east', zone: 'us-east-1a' }),
  );
  // The west sidecar's locality comes from Istio's topology labels (they win over node.locality).
  const west = await subscribe(
    envoyNode(
      'sidecar~127.0.1.2~web-west~default.svc',
      { region: 'us-east' },
      {
        [TOPOLOGY_REGION]: 'us-west',
        [TOPOLOGY_ZONE]: 'us-west-2a',
      },
    ),
  );
  assert.deepEqual(priorities(decoded(east.eds, CLUSTER_NAME)), {
    'us-east-1a': 0,
    'us-east-1b': 1,
    'us-west-2a': 2,
  });
  assert.deepEqual(priorities(decoded(west.eds, CLUSTER_NAME)), {
    'us-west-2a': 0,
    'us-east-1a': 1,
    'us-east-1b': 1,
  });

  const cluster = decoded(east.cds, CLUSTER_NAME) as {
    outlier_detection?: { consecutive_5xx?: { value: number }; max_ejection_percent?: { value: number } };
    common_lb_config?: { locality_weighted_lb_config?: object; healthy_panic_threshold?: object };
  };
  assert.equal(cluster.outlier_detection?.consecutive_5xx?.value, 3, 'Envoy ejects failing endpoints');
  assert.equal(cluster.outlier_detection?.max_ejection_percent?.value, 100);
  assert.deepEqual(cluster.common_lb_config?.locality_weighted_lb_config, {});

  for (const s of [east, west]) {
    const set = new Map([
      [CLUSTER, asEncoded(s.cds)],
      [ENDPOINT, asEncoded(s.eds)],
    ]);
    for (const [type, rs] of set)
      for (const r of rs)
        assert.deepEqual(validateEncoded(type.slice(type.lastIndexOf('/') + 1), r.value), [], r.name);
    // CDS and EDS only (no listeners asked for): every EDS cluster has its assignment.
    assert.deepEqual(checkConsistency(set), []);
  }

  // An endpoint change re-ranks each proxy's view: with us-east-1b gone, us-west moves up for east.
  plane.mock.setEndpoints(HOST, [
    endpoint('127.0.0.1', { grpc: 50051 }, { locality: EAST_A }),
    endpoint('127.0.0.3', { grpc: 50051 }, { locality: WEST }),
  ]);
  const eastUpdate = await east.client.next();
  assert.deepEqual(priorities(decoded(eastUpdate, CLUSTER_NAME)), { 'us-east-1a': 0, 'us-west-2a': 1 });
  const westUpdate = await west.client.next();
  assert.deepEqual(priorities(decoded(westUpdate, CLUSTER_NAME)), { 'us-west-2a': 0, 'us-east-1a': 1 });
});

test('/debug/config_dump shows each locality group’s priority for that proxy, 0 included', async () => {
  await subscribe(
    envoyNode('sidecar~127.0.1.3~web-dump~default.svc', { region: 'us-east', zone: 'us-east-1a' }),
  );
  const res = await fetch(
    `${adminUrl}/debug/config_dump?proxyID=${encodeURIComponent('sidecar~127.0.1.3~web-dump~default.svc')}`,
  );
  assert.equal(res.status, 200);
  const dump = (await res.json()) as { configs: Obj[] };
  const endpoints = dump.configs.find((c) => String(c['@type']).endsWith('EndpointsConfigDump'));
  const configs = (endpoints?.dynamic_endpoint_configs ?? []) as { endpoint_config: Obj }[];
  const echo = configs.find((c) => c.endpoint_config.cluster_name === CLUSTER_NAME)?.endpoint_config;
  assert.deepEqual(
    (echo?.endpoints as Obj[]).map((g) => [(g.locality as { zone: string }).zone, g.priority]),
    [
      ['us-east-1a', 0],
      ['us-west-2a', 1],
    ],
  );
});

test('/debug/proxy_configz (portolan proxy-config endpoints) gives each endpoint its priority for that proxy', async () => {
  const id = 'sidecar~127.0.1.4~web-table~default.svc';
  await subscribe(envoyNode(id, { region: 'us-west', zone: 'us-west-2a' }));
  const res = await fetch(`${adminUrl}/debug/proxy_configz?proxyID=${encodeURIComponent(id)}`);
  assert.equal(res.status, 200);
  const view = (await res.json()) as { endpoints: { cluster: string; locality: string; priority: number }[] };
  assert.deepEqual(
    view.endpoints.filter((e) => e.cluster === CLUSTER_NAME).map((e) => [e.locality, e.priority]),
    [
      ['us-west/us-west-2a', 0],
      ['us-east/us-east-1a', 1],
    ],
  );
});
